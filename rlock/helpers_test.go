package rlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// The Redis side of the tests (setups, unique names, subscriber and key
// checks) is in internal/redistest, shared with integration's tests. These
// two need package rlock, which redistest cannot import: rlock's own
// package-internal tests import redistest.

// newRlock returns an rlock Client on rc, closed when t ends.
func newRlock(t *testing.T, rc rueidis.Client, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// sharedClient returns an rlock Client on the package's shared Redis,
// closed when t ends.
func sharedClient(t *testing.T, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	return newRlock(t, redistest.Shared(t).Client(t), opts...)
}

// lockKeys are the Redis names of lock name under the default prefix.
func lockKeys(name string) keys.Keys {
	return keys.New(rlock.DefaultKeyPrefix, name)
}

// closeWhileRunning closes c while the goroutines of wg make calls on it,
// and checks what every such test demands: Close returns promptly, every
// call returns, no call met an error in bad (the calls put there the errors
// that were neither their own result nor ErrClosed), and every lock context
// of c in contexts is done. mu guards bad and contexts.
func closeWhileRunning(t *testing.T, c *rlock.Client, wg *sync.WaitGroup, mu *sync.Mutex, bad *[]error, contexts *[]context.Context) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 2*time.Second, "Close returns promptly")
	waitGroup(t, wg, 10*time.Second, "every call returns after Close")

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, *bad, "calls ended only with their own result or ErrClosed")
	assert.NotEmpty(t, *contexts, "the Client took locks before it closed")
	for _, lctx := range *contexts {
		assert.Error(t, lctx.Err(), "every lock context of the closed Client is done")
	}
}
