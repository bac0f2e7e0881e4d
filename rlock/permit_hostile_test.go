package rlock_test

import (
	"context"
	"errors"
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

// Hostile tests of travelling permits, public API only: requests given up
// mid-flight beside context-bound permits, one permit given back by many
// at once, Close while permits are taken and given back. Lost replies and
// late copies are integration's (faults_permit_test.go).

// TestPermitHostileMixedStorm: 120 goroutines on three Clients take
// permits of 4, half with Acquire and half with AcquirePermit, five times
// each, the first time for as long as it takes and then with contexts that
// expire 0-40 ms later; a travelling permit is
// given back by the next Client. Never more than 4 are held at once, and
// once every caller has given back what it got and every late copy has
// landed, all 4 are free and the holders hash is gone: no given-up request
// took a permit later.
func TestPermitHostileMixedStorm(t *testing.T) {
	const permits, goroutines, attempts = 4, 120, 5
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
	var got [2]atomic.Int32
	var wg sync.WaitGroup
	for i := range goroutines {
		sem, worker, travels := sems[i%3], sems[(i+1)%3], i%2 == 0
		wg.Go(func() {
			for attempt := range attempts {
				timeout := time.Duration(rand.IntN(40000)) * time.Microsecond
				if attempt == 0 { // every goroutine holds a permit at least once
					timeout = redistest.Patience
				}
				ctx, cancel := context.WithTimeout(t.Context(), timeout)
				var release func() error
				if travels {
					id, err := sem.AcquirePermit(ctx, time.Minute)
					if err != nil {
						cancel()
						assert.ErrorIs(t, err, context.DeadlineExceeded, "a failed AcquirePermit says why")
						continue
					}
					got[0].Add(1)
					release = func() error { return worker.ReleasePermit(ctx, id) }
				} else {
					pctx, err := sem.Acquire(ctx)
					if err != nil {
						cancel()
						assert.ErrorIs(t, err, context.DeadlineExceeded, "a failed Acquire says why")
						continue
					}
					got[1].Add(1)
					release = func() error { return sem.Release(pctx) }
				}
				held.enter()
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond) // holds of varied length
				held.leave()
				assert.NoError(t, release(), "a permit is given back, also after the caller's context ended")
				cancel()
			}
		})
	}
	wg.Wait()
	t.Logf("%d travelling and %d context permits taken of %d tries; at most %d held at once",
		got[0].Load(), got[1].Load(), goroutines*attempts, held.most.Load())
	assert.LessOrEqual(t, held.most.Load(), int32(permits), "never more permits out than there are")
	assert.GreaterOrEqual(t, got[0].Load(), int32(goroutines/2), "every goroutine that takes travelling permits got one at least")
	drain(t, clients...) // every late copy of a given-up call has landed
	assert.Equal(t, permits, available(t, sharedClient(t).Semaphore(name)), "every permit is free")
	assert.False(t, exists(t, node.Client(t), semaphoreKeys(name).Hash), "no holder left behind")
}

// TestPermitHostileReleaseRace: 30 goroutines on three Clients give back
// one permit at once, 20 times: exactly one of them succeeds each time,
// every other gets ErrNotHeld, and only that permit comes back.
func TestPermitHostileReleaseRace(t *testing.T) {
	const rounds, goroutines = 20, 30
	front, _ := newPermits(t, 2)
	var sems []*rlock.Semaphore
	for range 3 {
		sems = append(sems, sharedClient(t).Semaphore(front.Name()))
	}
	keep, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	for round := range rounds {
		id, err := front.AcquirePermit(t.Context(), time.Minute)
		require.NoError(t, err)
		var ok, notHeld atomic.Int32
		var wg sync.WaitGroup
		for i := range goroutines {
			sem := sems[i%3]
			wg.Go(func() {
				switch err := sem.ReleasePermit(t.Context(), id); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, rlock.ErrNotHeld):
					notHeld.Add(1)
				default:
					assert.NoError(t, err, "round %d", round)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), ok.Load(), "round %d: one release gives the permit back", round)
		assert.Equal(t, int32(goroutines-1), notHeld.Load(), "round %d: every other finds it gone", round)
		assert.Equal(t, 1, available(t, front), "round %d: one permit came back, the other is held", round)
	}
	require.NoError(t, front.ReleasePermit(t.Context(), keep))
	assert.Equal(t, 2, available(t, front))
}

// TestPermitHostileCloseWhileRunning: Close a Client while its goroutines
// take travelling permits, wait for them and give them back. Every call
// returns, with nil or ErrClosed; a permit the closed Client took is not
// the Client's: another Client gives it back, and then all are free.
func TestPermitHostileCloseWhileRunning(t *testing.T) {
	const permits = 3
	front, worker := newPermits(t, permits)
	c, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	sem := c.Semaphore(front.Name())
	var mu sync.Mutex
	var taken []string // ids the closed Client took and did not give back
	var calls atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for {
				id, err := sem.AcquirePermit(t.Context(), time.Minute)
				if err != nil {
					assert.ErrorIs(t, err, rlock.ErrClosed, "goroutine %d", i)
					return
				}
				calls.Add(1)
				time.Sleep(time.Millisecond) // a hold for Close to meet
				if err := sem.ReleasePermit(t.Context(), id); err != nil {
					assert.ErrorIs(t, err, rlock.ErrClosed, "goroutine %d", i)
					mu.Lock()
					taken = append(taken, id)
					mu.Unlock()
					return
				}
			}
		})
	}
	redistest.Eventually(t, "the Client's goroutines take permits", func(context.Context) error {
		if n := calls.Load(); n < 10 {
			return errors.New("fewer than 10 permits taken")
		}
		return nil
	})
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 5*time.Second, "Close returns promptly")
	waitGroup(t, &wg, redistest.Patience, "every call returns after Close")
	t.Logf("%d permits taken before Close; %d still out after it", calls.Load(), len(taken))
	assert.LessOrEqual(t, len(taken), permits)
	assert.Equal(t, permits-len(taken), available(t, front), "only the permits still out are held")
	for _, id := range taken {
		assert.NoError(t, worker.ReleasePermit(t.Context(), id), "another Client gives back what the closed one took")
	}
	assert.Equal(t, permits, available(t, front))
}
