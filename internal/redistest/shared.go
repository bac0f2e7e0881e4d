package redistest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/rlock/rlock/internal/redisserver"
)

// shared is the node a package's tests share, started on first use.
var shared struct {
	once sync.Once
	node *Node
	err  error
}

// Shared returns the Redis that the running package's tests share, started
// on first use with the preferred backend and stopped by Main. Tests that
// share it use keys of their own.
func Shared(t testing.TB) *Node {
	t.Helper()
	shared.once.Do(func() {
		shared.node, shared.err = Start(context.Background(), Config{})
		if shared.err == nil {
			fmt.Fprintf(os.Stderr, "redistest: shared redis at %s (%s backend, %s)\n",
				shared.node.Addr(), shared.node.Backend(), redisserver.Version())
		}
	})
	if shared.err != nil {
		t.Fatalf("redistest: shared redis: %v", shared.err)
	}
	return shared.node
}

// stopShared stops the shared node, if one was started.
func stopShared() {
	if shared.node == nil {
		return
	}
	if err := shared.node.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "redistest: stop shared redis: %v\n", err)
	}
}
