package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFairMutex runs the FairMutex suite on every Redis setup the harness
// offers, a Cluster too.
func TestFairMutex(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"FIFOAcrossClients":  testFairFIFO,
		"CancelStorm":        testFairCancelStorm,
		"ReentryNeverQueues": testFairReentry,
		"TryLockNoWait":      testFairTryLockNoWait,
		"ForceUnlock":        testFairForceUnlock,
	}
	redistest.ForEachSetup(t, func(t *testing.T, s redistest.Setup) {
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tc(t, s)
			})
		}
	})
}

// queued returns the live waiters in the queue of fair lock name.
func queued(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	return redistest.Queued(t, rc, fairKeys(name))
}

// waitQueued waits until n waiters are in lock name's queue.
func waitQueued(t *testing.T, rc rueidis.Client, name string, n int) {
	t.Helper()
	redistest.WaitQueued(t, rc, fairKeys(name), n)
}

// testFairFIFO: 20 waiters over 3 Clients, each queued after the one before
// it, get the lock in that order, each handed it by the release before.
func testFairFIFO(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	admin := s.Client(t)
	clients := []*rlock.Client{newRlock(t, s.Client(t)), newRlock(t, s.Client(t)), newRlock(t, s.Client(t))}
	holder, err := clients[0].FairMutex(name).Lock(t.Context())
	require.NoError(t, err)

	const waiters = 20
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range waiters {
		fm := clients[i%len(clients)].FairMutex(name)
		wg.Go(func() {
			ctx, err := fm.Lock(t.Context())
			if !assert.NoError(t, err, "waiter %d", i) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			assert.NoError(t, fm.Unlock(ctx), "waiter %d", i)
		})
		waitQueued(t, admin, name, i+1)
	}
	require.NoError(t, clients[0].FairMutex(name).Unlock(holder))
	wg.Wait()
	want := make([]int, waiters)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, order, "owners get the lock in the order they queued")
	assert.Empty(t, queued(t, admin, name), "nobody is left in the queue")
	locked, err := clients[1].FairMutex(name).IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked)
}

// testFairCancelStorm: of 30 queued waiters, every other one gives up
// (context cancelled, or a TryLock wait running out) while the lock is
// held or being handed on; the others get the lock in their order, and the
// queue is empty after.
func testFairCancelStorm(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	admin := s.Client(t)
	clients := []*rlock.Client{newRlock(t, s.Client(t)), newRlock(t, s.Client(t))}
	holder, err := clients[0].FairMutex(name).Lock(t.Context())
	require.NoError(t, err)

	const waiters = 30
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	var timedOut atomic.Int64
	cancels := make([]context.CancelFunc, waiters)
	for i := range waiters {
		fm := clients[i%2].FairMutex(name)
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		wg.Go(func() {
			var lctx context.Context
			var ok bool
			var err error
			if i%4 == 3 {
				// Its wait runs out while the lock is held or handed on.
				lctx, ok, err = fm.TryLock(ctx, 200*time.Millisecond+time.Duration(i)*10*time.Millisecond, 0)
				if err == nil && !ok {
					timedOut.Add(1)
				}
			} else {
				lctx, err = fm.Lock(ctx)
				ok = err == nil
			}
			if !ok {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(60 * time.Millisecond) // a hold, so that the hand-overs take a while
			assert.NoError(t, fm.Unlock(lctx), "waiter %d", i)
		})
		redistest.Eventually(t, fmt.Sprintf("waiter %d queued", i), func(context.Context) error {
			return redistest.Exactly("queued", len(queued(t, admin, name)), i+1-int(timedOut.Load()))
		})
	}
	for i := 1; i < waiters; i += 4 {
		cancels[i]() // gone before the lock is free
	}
	require.NoError(t, clients[0].FairMutex(name).Unlock(holder))
	redistest.Eventually(t, "the lock is handed on", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(order) == 0 {
			return errors.New("no waiter holds it yet")
		}
		return nil
	})
	for i := 5; i < waiters; i += 8 {
		cancels[i]() // gone while it is handed on
	}
	wg.Wait()
	for _, c := range cancels {
		c()
	}
	for k := 1; k < len(order); k++ {
		assert.Less(t, order[k-1], order[k], "FIFO among those that stayed: %v", order)
	}
	for i := 0; i < waiters; i += 2 {
		assert.Contains(t, order, i, "waiter %d never gave up and got the lock", i)
	}
	assert.Positive(t, timedOut.Load(), "some TryLock waits ran out in the queue")
	waitQueued(t, admin, name, 0) // no stuck entry left in the queue
	ctx, ok, err := clients[1].FairMutex(name).TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "the lock is free and nobody waits")
	require.NoError(t, clients[1].FairMutex(name).Unlock(ctx))
}

// testFairReentry: the holder re-enters without queueing, though others
// wait.
func testFairReentry(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	admin := s.Client(t)
	a, b := newRlock(t, s.Client(t)).FairMutex(name), newRlock(t, s.Client(t)).FairMutex(name)
	outer, err := a.Lock(t.Context())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		ctx, err := b.Lock(t.Context())
		if err == nil {
			err = b.Unlock(ctx)
		}
		done <- err
	}()
	waitQueued(t, admin, name, 1)
	inner, err := a.Lock(outer)
	require.NoError(t, err, "re-entry while another waits")
	n, err := a.HoldCount(inner)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	token, ok := a.FencingToken(inner)
	require.True(t, ok)
	require.NoError(t, a.Unlock(inner))
	require.NoError(t, a.Unlock(outer))
	require.NoError(t, <-done)
	assert.ErrorIs(t, outer.Err(), context.Canceled)
	assert.Greater(t, token, int64(0))
}

// testFairTryLockNoWait: TryLock with wait 0 does not pass a queued
// waiter by, even when the lock is free.
func testFairTryLockNoWait(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	admin := s.Client(t)
	a, b, c := newRlock(t, s.Client(t)).FairMutex(name), newRlock(t, s.Client(t)).FairMutex(name), newRlock(t, s.Client(t)).FairMutex(name)
	held, err := a.Lock(t.Context())
	require.NoError(t, err)
	got := make(chan context.Context, 1)
	go func() {
		ctx, err := b.Lock(t.Context())
		assert.NoError(t, err)
		got <- ctx
	}()
	waitQueued(t, admin, name, 1)
	_, ok, err := c.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "held")
	require.NoError(t, a.Unlock(held))
	bctx := <-got
	_, ok, err = c.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "handed to the waiter")
	require.NoError(t, b.Unlock(bctx))
}

// testFairForceUnlock: ForceUnlock ends the holder's hold and leaves the
// queue; the waiters it wakes hand the lock to the one longest in it.
func testFairForceUnlock(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	admin := s.Client(t)
	holder := newRlock(t, s.Client(t)).FairMutex(name)
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)
	first, second := newRlock(t, s.Client(t)).FairMutex(name), newRlock(t, s.Client(t)).FairMutex(name)
	got := make(chan *rlock.FairMutex, 2)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, fm := range []*rlock.FairMutex{first, second} {
		wg.Go(func() {
			ctx, err := fm.Lock(t.Context())
			if assert.NoError(t, err) {
				got <- fm
				time.Sleep(20 * time.Millisecond) // a hold, while the next one waits
				assert.NoError(t, fm.Unlock(ctx))
			}
		})
		waitQueued(t, admin, name, i+1)
	}
	forced, err := holder.ForceUnlock(t.Context()) // the holder's own Client ends its hold at once
	require.NoError(t, err)
	assert.True(t, forced)
	receive(t, held.Done(), "the end of the force-unlocked holder's context")
	assert.ErrorIs(t, context.Cause(held), rlock.ErrLockLost)
	for _, want := range []*rlock.FairMutex{first, second} {
		assert.Same(t, want, receive(t, got, "the next waiter after ForceUnlock"), "the queue's order holds after ForceUnlock")
	}
}
