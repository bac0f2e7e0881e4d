package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/rlock/rlock/internal/redisserver"
)

// DefaultImage is the Redis image the docker backend runs when
// RLOCK_REDIS_IMAGE is unset: built locally by .ci/redis-image.sh, since
// this machine cannot pull images.
const DefaultImage = "rlock-redis:local"

// ryukImage is the reaper image testcontainers-go starts unless told not to.
const ryukImage = "testcontainers/ryuk:0.14.0"

// image is the Redis image the docker backend runs.
func image() string {
	if img := os.Getenv("RLOCK_REDIS_IMAGE"); img != "" {
		return img
	}
	return DefaultImage
}

// dockerClient is the harness's own connection to the Docker engine, for
// what testcontainers-go does not offer (pause, kill with a signal) and for
// checks made before testcontainers-go reads its configuration. It
// negotiates the API version with the engine (the default since moby client
// v0.6).
var dockerClient = sync.OnceValues(func() (*client.Client, error) {
	return client.New(client.FromEnv)
})

// dockerReachable reports whether a Docker engine answers.
func dockerReachable() bool {
	cli, err := dockerClient()
	if err != nil {
		return false
	}
	_, err = cli.Ping(context.Background(), client.PingOptions{NegotiateAPIVersion: true})
	return err == nil
}

// dockerAvailable reports why the docker backend cannot run Redis, or nil.
var dockerAvailable = sync.OnceValue(func() error {
	if !dockerReachable() {
		return errors.New("no Docker engine answers")
	}
	cli, _ := dockerClient()
	if _, err := cli.ImageInspect(context.Background(), image()); err != nil {
		return fmt.Errorf("image %s is not present (build it with: bash .ci/redis-image.sh): %w", image(), err)
	}
	return nil
})

// prepareDocker sets what testcontainers-go reads once, before it first
// runs: dial containers at 127.0.0.1 rather than a gateway address, and
// start no reaper whose image cannot be pulled here.
func prepareDocker() {
	// The harness logs each node it starts; testcontainers-go's own
	// progress lines would drown the test output.
	tclog.SetDefault(tclog.NewNoopLogger())
	if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") == "" {
		os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") != "" || !dockerReachable() {
		return
	}
	cli, _ := dockerClient()
	if _, err := cli.ImageInspect(context.Background(), ryukImage); err != nil {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}

// containerServer is Redis in a container whose port 6379 is published on
// a fixed loopback port, so that a restart keeps its address.
type containerServer struct {
	c    testcontainers.Container
	port string
}

// startContainer runs the Redis image with extra redis-server arguments.
func startContainer(ctx context.Context, extra []string) (*containerServer, error) {
	prepareDocker()
	var last error
	for range 3 {
		port, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		s, err := runContainer(ctx, port, extra)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func runContainer(ctx context.Context, port string, extra []string) (*containerServer, error) {
	redisPort := network.MustParsePort("6379/tcp")
	req := testcontainers.ContainerRequest{
		Image:        image(),
		ExposedPorts: []string{"6379/tcp"},
		Cmd:          append(append(redisserver.BaseArgs("6379"), "--bind", "0.0.0.0"), extra...),
		Labels:       map[string]string{"org.rlock.redistest": "node"},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{redisPort: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: port}}}
		},
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if err != nil {
		if c != nil {
			err = errors.Join(err, c.Terminate(context.WithoutCancel(ctx)))
		}
		return nil, fmt.Errorf("redistest: start container: %w", err)
	}
	s := &containerServer{c: c, port: port}
	if err := redisserver.WaitReady(ctx, s.Addr()); err != nil {
		return nil, errors.Join(err, c.Terminate(context.WithoutCancel(ctx)))
	}
	return s, nil
}

func (s *containerServer) Addr() string { return net.JoinHostPort("127.0.0.1", s.port) }

// Kill sends SIGKILL to the container: Redis dies with its data.
func (s *containerServer) Kill(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	_, err = cli.ContainerKill(ctx, s.c.GetContainerID(), client.ContainerKillOptions{Signal: "SIGKILL"})
	return err
}

// Restart starts the killed container again: a fresh, empty Redis on the
// same published port.
func (s *containerServer) Restart(ctx context.Context) error {
	if err := s.c.Start(ctx); err != nil {
		return fmt.Errorf("redistest: restart container: %w", err)
	}
	return redisserver.WaitReady(ctx, s.Addr())
}

func (s *containerServer) Pause(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	_, err = cli.ContainerPause(ctx, s.c.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

func (s *containerServer) Resume(ctx context.Context) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	_, err = cli.ContainerUnpause(ctx, s.c.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

func (s *containerServer) Close(ctx context.Context) error {
	return s.c.Terminate(ctx)
}
