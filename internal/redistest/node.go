package redistest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Config says how to start a Node.
type Config struct {
	// Backend is External, Docker or Process; empty picks the most
	// preferred one this machine offers.
	Backend string
	// Args are extra redis-server arguments, such as "--maxmemory", "1mb".
	Args []string
	// Env is added to redis-server's environment (Process backend only),
	// such as a FakeClock's.
	Env []string
}

// Node is one real Redis server and the means to hurt it.
type Node struct {
	backend string
	srv     server

	mu     sync.Mutex
	paused bool
}

// Start starts a Redis as cfg says. The caller must Close it.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	backend := cfg.Backend
	if backend == "" {
		var err error
		if backend, err = preferred(); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
	}
	if cfg.Env != nil && backend != Process {
		return nil, fmt.Errorf("redistest: an environment for redis-server needs the %s backend, not %s", Process, backend)
	}
	srv, err := startServer(ctx, backend, cfg)
	if err != nil {
		return nil, err
	}
	return &Node{backend: backend, srv: srv}, nil
}

// New starts a Redis for t as cfg says, logs which backend it used, and
// stops it when t ends. It fails t if no Redis can be started.
func New(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Logf("redistest: redis at %s (%s backend)", n.Addr(), n.Backend())
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("redistest: stop %s: %v", n.Addr(), err)
		}
	})
	return n
}

// Addr is the server's host:port, always on loopback.
func (n *Node) Addr() string { return n.srv.Addr() }

// Backend names the backend that runs the server.
func (n *Node) Backend() string { return n.backend }

// Controllable reports whether the harness can pause, kill and restart the
// server: false for the server at REDIS_ADDR.
func (n *Node) Controllable() bool { return n.backend != External }

// NewClient returns a rueidis client of the server; the caller closes it.
func (n *Node) NewClient() (rueidis.Client, error) {
	rc, err := rueidis.NewClient(ClientOption(n.Addr()))
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", n.Addr(), err)
	}
	return rc, nil
}

// Client returns a rueidis client of the server, closed when t ends.
func (n *Node) Client(t testing.TB) rueidis.Client {
	t.Helper()
	return testClient(t, n.NewClient)
}

// testClient returns the client newClient makes, closed when t ends; it
// fails t when there is none.
func testClient(t testing.TB, newClient func() (rueidis.Client, error)) rueidis.Client {
	t.Helper()
	rc, err := newClient()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// newModeClient returns a rueidis client made with opt, checking that it
// speaks to what of the deployment in mode.
func newModeClient(opt rueidis.ClientOption, mode rueidis.ClientMode, what string) (rueidis.Client, error) {
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", what, err)
	}
	if got := rc.Mode(); got != mode {
		rc.Close()
		return nil, fmt.Errorf("client of the %s is in %s mode", what, got)
	}
	return rc, nil
}

// ClientOption is how the harness connects to a server at addr: tuned so
// that a dead or paused server is noticed within a few seconds.
func ClientOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:      []string{addr},
		ConnWriteTimeout: 2 * time.Second,
	}
}

// Kill stops the server at once; its data is lost.
func (n *Node) Kill(ctx context.Context) error {
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return n.srv.Kill(ctx)
}

// Restart starts a killed server again, empty, on the same address.
func (n *Node) Restart(ctx context.Context) error { return n.srv.Restart(ctx) }

// Pause freezes the server (SIGSTOP, docker pause): connections stay open
// and nothing is answered until Resume.
func (n *Node) Pause(ctx context.Context) error {
	if err := n.srv.Pause(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
	return nil
}

// Resume lets a paused server run again.
func (n *Node) Resume(ctx context.Context) error {
	if err := n.srv.Resume(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return nil
}

// Close stops the server, resuming it first if it is paused.
func (n *Node) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n.mu.Lock()
	paused := n.paused
	n.mu.Unlock()
	var errs []error
	if paused {
		errs = append(errs, n.srv.Resume(ctx))
	}
	return errors.Join(append(errs, n.srv.Close(ctx))...)
}
