package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Hostile tests of the Semaphore, public API only: owners shared by many
// goroutines, requests given up mid-flight, Close while everything runs.
// Each checks that no more permits are held than there are, and that
// nothing is left in Redis afterwards.

// permitCounter tracks the permits held at once, as callers see them.
type permitCounter struct {
	inside, most atomic.Int32
}

func (p *permitCounter) enter() {
	n := p.inside.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
}

func (p *permitCounter) leave() { p.inside.Add(-1) }

// TestSemaphoreHostileSharedOwner: 24 goroutines share one owner context
// and each takes and gives back a permit with it, 5 times, on 8 permits:
// the owner holds up to all 8 (its goroutines beyond wait for its own
// releases), never more, and at the end nothing is held.
func TestSemaphoreHostileSharedOwner(t *testing.T) {
	const permits, goroutines, rounds = 8, 24, 5
	rc := redistest.Shared(t).Client(t)
	sem := newRlock(t, rc).Semaphore(redistest.LockName(t))
	_, err := sem.TrySetPermits(t.Context(), permits)
	require.NoError(t, err)
	owner, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	var held permitCounter
	held.enter()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				ctx, err := sem.Acquire(owner)
				if !assert.NoError(t, err) {
					return
				}
				held.enter()
				assert.Equal(t, owner, ctx, "the shared owner's context carries every permit")
				time.Sleep(time.Millisecond) // a hold, so that the goroutines' permits overlap
				held.leave()
				assert.NoError(t, sem.Release(ctx))
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, held.most.Load(), int32(permits), "never more permits than there are")
	assert.Equal(t, permits-1, available(t, sem), "the owner holds its first permit still")
	require.NoError(t, sem.Release(owner))
	assert.Equal(t, permits, available(t, sem))
	assert.False(t, exists(t, rc, semaphoreKeys(sem.Name()).Hash), "no holder left")
}

// TestSemaphoreHostileCancelStorm: 150 goroutines on three Clients take a
// permit of 4, five times each, with contexts that expire 0-20 ms later.
// Never more than 4 are held at once, and once every caller has given back
// what it got, all 4 are free, the holders hash is gone and stays gone: no
// given-up request took a permit later.
func TestSemaphoreHostileCancelStorm(t *testing.T) {
	const permits, goroutines, attempts = 4, 150, 5
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	var clients []drainable
	var sems []*rlock.Semaphore
	for range 3 {
		c := newDrainable(t, redistest.Setup{Node: node})
		clients = append(clients, c)
		sems = append(sems, c.Semaphore(name))
	}
	_, err := sems[0].TrySetPermits(t.Context(), permits)
	require.NoError(t, err)
	var held permitCounter
	var got atomic.Int32
	var wg sync.WaitGroup
	for i := range goroutines {
		sem := sems[i%3]
		wg.Go(func() {
			for range attempts {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(20000))*time.Microsecond)
				pctx, err := sem.Acquire(ctx)
				if err != nil {
					cancel()
					assert.ErrorIs(t, err, context.DeadlineExceeded, "a failed Acquire says why")
					continue
				}
				got.Add(1)
				held.enter()
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond) // holds of varied length
				held.leave()
				assert.NoError(t, sem.Release(pctx), "Release works after the caller's context ended")
				cancel()
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d acquires got a permit; at most %d held at once", got.Load(), goroutines*attempts, held.most.Load())
	assert.LessOrEqual(t, held.most.Load(), int32(permits))
	drain(t, clients...) // every late copy of a given-up call has landed
	assert.Equal(t, permits, available(t, sharedClient(t).Semaphore(name)), "every permit is free")
	assert.False(t, exists(t, node.Client(t), semaphoreKeys(name).Hash), "no holder left behind")
}

// TestSemaphoreHostileCloseWhileRunning: Close a Client while its
// goroutines hold, wait for and release permits. Every call returns (an
// error wraps ErrClosed, or the call was done before), every permit
// context ends, and the Client's permits come back within their lease to
// another Client.
func TestSemaphoreHostileCloseWhileRunning(t *testing.T) {
	const lease = 500 * time.Millisecond
	name := redistest.LockName(t)
	c, err := rlock.New(redistest.Shared(t).Client(t), rlock.WithLeaseTime(lease))
	require.NoError(t, err)
	sem := c.Semaphore(name)
	_, err = sem.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var ctxs sync.Map
	for i := range 20 {
		wg.Go(func() {
			for {
				ctx, err := sem.Acquire(t.Context())
				if err != nil {
					assert.ErrorIs(t, err, rlock.ErrClosed, "goroutine %d", i)
					return
				}
				ctxs.Store(ctx, true)
				time.Sleep(time.Millisecond) // a hold for Close to meet
				if err := sem.Release(ctx); err != nil {
					assert.True(t, errors.Is(err, rlock.ErrClosed) || errors.Is(err, rlock.ErrLockLost), "goroutine %d: %v", i, err)
					return
				}
			}
		})
	}
	redistest.Eventually(t, "the Client's goroutines take permits", func(context.Context) error {
		n := 0
		ctxs.Range(func(any, any) bool { n++; return true })
		if n < 10 {
			return fmt.Errorf("%d permits taken", n)
		}
		return nil
	})
	require.NoError(t, c.Close())
	wg.Wait()
	ctxs.Range(func(k, _ any) bool {
		assert.Error(t, k.(context.Context).Err(), "every permit context ended")
		return true
	})
	other := sharedClient(t).Semaphore(name)
	t.Logf("right after Close, %d permits are free", available(t, other))
	ctx, ok, err := other.TryAcquire(t.Context(), 5*lease, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ctx2, ok, err := other.TryAcquire(t.Context(), 5*lease, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ctx3, ok, err := other.TryAcquire(t.Context(), 5*lease, 0)
	require.NoError(t, err)
	require.True(t, ok, "all three permits come back after the closed Client's lease")
	for _, c := range []context.Context{ctx, ctx2, ctx3} {
		require.NoError(t, other.Release(c))
	}
}
