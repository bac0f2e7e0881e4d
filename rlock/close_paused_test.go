package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestCloseWhileRedisPaused: Close while Redis is paused, with
// holds the watchdog renews, waiters of every kind, and TryLocks giving
// up (whose settling needs Redis). Close returns within a few seconds;
// once it has returned no goroutine of rlock runs; every call returns
// once Redis is back, with ErrClosed or its own result, and every lock
// context is done.
func TestCloseWhileRedisPaused(t *testing.T) {
	const lease = time.Second
	node := redistest.New(t, redistest.Config{})
	other := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease))
	rc := node.Client(t)
	require.NoError(t, rc.Do(t.Context(), rc.B().Ping().Build()).Error())
	before := rlockGoroutineIDs()
	c, err := rlock.New(rc, rlock.WithLeaseTime(lease))
	require.NoError(t, err)
	base := redistest.LockName(t)

	var contexts []context.Context
	for i := range 4 {
		lctx, err := c.Mutex(fmt.Sprintf("%s:held:%d", base, i)).Lock(t.Context())
		require.NoError(t, err)
		contexts = append(contexts, lctx)
	}
	// Locks the other Client holds, that c's goroutines wait for: on fixed
	// leases, so that no renewal or lapse of other's runs goroutines of
	// rlock beside c's Close.
	_, err = other.Mutex(base+":m").LockFor(t.Context(), time.Minute)
	require.NoError(t, err)
	_, err = other.FairMutex(base+":f").LockFor(t.Context(), time.Minute)
	require.NoError(t, err)
	_, err = other.RWMutex(base+":rw").LockFor(t.Context(), time.Minute)
	require.NoError(t, err)
	_, err = other.Semaphore(base+":s").TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	_, err = other.Semaphore(base+":s").AcquireFor(t.Context(), time.Minute)
	require.NoError(t, err)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []error
	check := func(what string, err error) {
		if err != nil && !errors.Is(err, rlock.ErrClosed) {
			mu.Lock()
			bad = append(bad, fmt.Errorf("%s: %w", what, err))
			mu.Unlock()
		}
	}
	for range 2 {
		wg.Go(func() { _, err := c.Mutex(base + ":m").Lock(t.Context()); check("Mutex.Lock", err) })
		wg.Go(func() { _, err := c.FairMutex(base + ":f").Lock(t.Context()); check("FairMutex.Lock", err) })
		wg.Go(func() { _, err := c.RWMutex(base + ":rw").RLock(t.Context()); check("RLock", err) })
		wg.Go(func() { _, err := c.Semaphore(base + ":s").Acquire(t.Context()); check("Acquire", err) })
	}
	time.Sleep(300 * time.Millisecond) // the waiters sleep
	require.NoError(t, node.Pause(t.Context()))
	resumed := false
	defer func() {
		if !resumed {
			_ = node.Resume(context.Background())
		}
	}()
	// TryLocks that give up while Redis is paused: their settling waits.
	for i := range 3 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, _, err := c.Mutex(fmt.Sprintf("%s:try:%d", base, i)).TryLock(ctx, time.Second, 0)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				check("TryLock", err)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	require.NoError(t, c.Close())
	took := time.Since(start)
	left := goroutinesLeft(before...)
	require.NoError(t, node.Resume(t.Context()))
	resumed = true
	assert.Less(t, took, 3*time.Second, "Close with Redis paused took %v", took)
	var names []string
	for _, g := range left {
		first := strings.SplitN(g, "\n", 3)
		if len(first) > 1 {
			names = append(names, first[0]+" "+first[1])
		}
	}
	if !assert.Empty(t, names, "goroutines of rlock still running after Close returned") {
		for _, g := range left {
			t.Logf("left running:\n%s", g)
		}
	}
	waitGroup(t, &wg, redistest.Patience, "every call returns")
	mu.Lock()
	assert.Empty(t, bad)
	mu.Unlock()
	for _, lctx := range contexts {
		assert.Error(t, lctx.Err())
	}
}
