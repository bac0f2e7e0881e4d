package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rlock/rlock/internal/redisserver"
)

// examples are the servers a package's Example functions use, started on
// first use and stopped by Main.
var examples struct {
	mu    sync.Mutex
	nodes []*Node
}

// ExampleAddrs returns the addresses of n independent Redis servers for the
// running package's Example functions, which have no testing.T to start a
// Node with. The servers are started on first use with the preferred
// backend, kept for the package's later examples, and stopped by Main. Each
// call hands them out empty (FLUSHALL), so an example's output does not
// depend on what an earlier one left, such as a lock that a Close left to
// expire.
//
// With REDIS_ADDR set, the first address is that server, which is never
// flushed; the others, which a RedLock needs to be independent of it, are
// redis-server child processes.
//
// ExampleAddrs panics when a server cannot be started or emptied: an Example
// has no other way to fail.
func ExampleAddrs(n int) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	examples.mu.Lock()
	defer examples.mu.Unlock()
	for len(examples.nodes) < n {
		node, err := startExample(ctx, len(examples.nodes))
		if err != nil {
			panic(fmt.Sprintf("redistest: example redis: %v", err))
		}
		fmt.Fprintf(os.Stderr, "redistest: example redis at %s (%s backend)\n", node.Addr(), node.Backend())
		examples.nodes = append(examples.nodes, node)
	}
	addrs := make([]string, n)
	for i, node := range examples.nodes[:n] {
		if node.Controllable() {
			if err := redisserver.Inline(ctx, node.Addr(), "FLUSHALL", "+OK"); err != nil {
				panic(fmt.Sprintf("redistest: example redis at %s: %v", node.Addr(), err))
			}
		}
		addrs[i] = node.Addr()
	}
	return addrs
}

// startExample starts the example server number i.
func startExample(ctx context.Context, i int) (*Node, error) {
	backend, err := preferred()
	if err != nil {
		return nil, err
	}
	if backend == External && i > 0 {
		backend = Process
	}
	return Start(ctx, Config{Backend: backend})
}

// stopExamples stops the example servers, if any were started.
func stopExamples() {
	examples.mu.Lock()
	defer examples.mu.Unlock()
	var errs []error
	for _, node := range examples.nodes {
		errs = append(errs, node.Close())
	}
	examples.nodes = nil
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "redistest: stop example redis: %v\n", err)
	}
}
