package redistest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/rlock/rlock/internal/redisserver"
)

// The backend names a Node reports.
const (
	External = redisserver.BackendExternal // REDIS_ADDR
	Docker   = "docker"                    // testcontainers-go
	Process  = redisserver.BackendProcess  // redis-server child process
)

// server is one running Redis, whichever backend started it. A
// *redisserver.Process is one.
type server interface {
	Addr() string
	Kill(ctx context.Context) error    // stop at once, losing all data
	Restart(ctx context.Context) error // start again, empty, on the same address
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Close(ctx context.Context) error
}

// Backends returns every backend this machine offers, most preferred first:
// only External when REDIS_ADDR is set, else Docker and Process where
// available. It fails t when none is, and when CI=true but Docker is
// reachable without the image, so CI never quietly tests less.
func Backends(t testing.TB) []string {
	t.Helper()
	out, err := available()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if dockerErr := dockerAvailable(); out[0] != External && dockerErr != nil && os.Getenv("CI") == "true" && dockerReachable() {
		t.Fatalf("redistest: Docker is reachable but cannot run Redis: %v", dockerErr)
	}
	return out
}

// preferred is the backend a Config without one uses.
func preferred() (string, error) {
	out, err := available()
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// available lists the backends this machine offers, most preferred first,
// or says why there is none.
var available = sync.OnceValues(func() ([]string, error) {
	if os.Getenv("REDIS_ADDR") != "" {
		return []string{External}, nil
	}
	var out []string
	dockerErr := dockerAvailable()
	if dockerErr == nil {
		out = append(out, Docker)
	}
	if len(out) == 0 {
		// No image to run: redis-server is the one way left, installed
		// here if this process can, else the error says how.
		if err := redisserver.Ensure(context.Background(), os.Stderr); err != nil {
			return nil, fmt.Errorf("no Redis: %w\n(docker: %v)", err, dockerErr)
		}
	}
	if redisserver.HaveRedisServer() {
		out = append(out, Process)
	}
	return out, nil
})

// startServer starts a Redis on backend as cfg says.
func startServer(ctx context.Context, backend string, cfg Config) (server, error) {
	switch backend {
	case External:
		return externalServer(os.Getenv("REDIS_ADDR")), nil
	case Docker:
		return startContainer(ctx, cfg.Args)
	case Process:
		return redisserver.StartProcess(ctx, redisserver.Launcher{Env: cfg.Env}, "", cfg.Args)
	}
	return nil, fmt.Errorf("redistest: unknown backend %q", backend)
}

// externalServer is the server at REDIS_ADDR: usable, never controlled.
type externalServer string

func (s externalServer) Addr() string { return string(s) }

func (s externalServer) Kill(context.Context) error    { return errNotControllable }
func (s externalServer) Restart(context.Context) error { return errNotControllable }
func (s externalServer) Pause(context.Context) error   { return errNotControllable }
func (s externalServer) Resume(context.Context) error  { return errNotControllable }
func (s externalServer) Close(context.Context) error   { return nil }

var errNotControllable = fmt.Errorf("redistest: the Redis at REDIS_ADDR is not controlled by the harness")
