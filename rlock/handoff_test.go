package rlock_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// hotLock is the part of a Mutex or FairMutex that the hand-over tests
// call.
type hotLock interface {
	Lock(ctx context.Context) (context.Context, error)
	Unlock(ctx context.Context) error
	FencingToken(ctx context.Context) (int64, bool)
	IsLocked(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int, error)
}

// hotLockKinds are the kinds whose Unlock hands over, as the tests open
// them.
var hotLockKinds = []struct {
	name string
	open func(c *rlock.Client, name string) hotLock
}{
	{"Mutex", func(c *rlock.Client, name string) hotLock { return c.Mutex(name) }},
	{"FairMutex", func(c *rlock.Client, name string) hotLock { return c.FairMutex(name) }},
}

// hotLoop has n goroutines take and release m until stop is done, each
// hold lasting hold, and checks every hold: no two overlap, and fencing
// tokens rise with every hold. It returns each goroutine's holds once
// they have all stopped.
func hotLoop(t *testing.T, m hotLock, n int, hold time.Duration, stop context.Context) func() []int {
	var (
		wg     sync.WaitGroup
		inside atomic.Int32
		mu     sync.Mutex
		last   int64
		taken  = make([]int, n)
	)
	for i := range n {
		wg.Go(func() {
			for stop.Err() == nil {
				lctx, err := m.Lock(stop)
				if err != nil {
					assert.ErrorIs(t, err, stop.Err(), "only the end of the loop stops a Lock")
					return
				}
				assert.EqualValues(t, 1, inside.Add(1), "one holder at a time")
				token, ok := m.FencingToken(lctx)
				assert.True(t, ok)
				mu.Lock()
				assert.Greater(t, token, last, "tokens rise with every hold")
				last = token
				mu.Unlock()
				taken[i]++
				time.Sleep(hold) // the workload: a hold of this length
				inside.Add(-1)
				assert.NoError(t, m.Unlock(lctx))
			}
		})
	}
	return func() []int {
		wg.Wait()
		return taken
	}
}

// TestHandOverHotLock: sixteen goroutines of one Client on one lock pass
// it among themselves, one holder at a time, in rising tokens, each
// getting its share: a release hands the lock to the waiter parked
// longest (a FairMutex's: to the head of its queue, which leaves nobody
// queued once they stop).
func TestHandOverHotLock(t *testing.T) {
	// The least min/max of holds per goroutine, by kind.
	share := map[string]float64{"Mutex": 0.5, "FairMutex": 0.8}
	for _, k := range hotLockKinds {
		t.Run(k.name, func(t *testing.T) {
			m := k.open(sharedClient(t), redistest.LockName(t))
			stop, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			taken := hotLoop(t, m, 16, 0, stop)()
			total := 0
			for _, n := range taken {
				total += n
			}
			t.Logf("holds per goroutine: %v", taken)
			require.Greater(t, total, 100, "holds in two seconds: %v", taken)
			assert.GreaterOrEqual(t, float64(slices.Min(taken))/float64(slices.Max(taken)), share[k.name], "every goroutine gets a share: %v", taken)
			locked, err := m.IsLocked(t.Context())
			require.NoError(t, err)
			assert.False(t, locked, "the last Unlock freed the lock")
			if k.name == "FairMutex" {
				waitQueued(t, redistest.Shared(t).Client(t), redistest.LockName(t), 0)
			}
		})
	}
}

// TestHandOverYieldsToOtherClient: while eight goroutines of one Client
// pass a lock among themselves, a waiter of another Client is refused
// once, recorded as waiting, and the Client passes the lock on at most
// eight times more before a release frees it for that waiter: it gets the
// lock, every time it asks, within a few holds.
func TestHandOverYieldsToOtherClient(t *testing.T) {
	name := redistest.LockName(t)
	stop, cancel := context.WithCancel(t.Context())
	wait := hotLoop(t, sharedClient(t).Mutex(name), 8, time.Millisecond, stop)
	other := newRlock(t, redistest.Shared(t).Client(t)).Mutex(name)
	for range 5 {
		start := time.Now()
		ctx, cancelWait := context.WithTimeout(t.Context(), redistest.Patience)
		lctx, err := other.Lock(ctx)
		require.NoError(t, err, "the other Client's waiter gets the lock")
		waited := time.Since(start)
		t.Logf("the other Client waited %v", waited)
		assert.Less(t, waited, 2*time.Second, "a few holds of 1 ms, not a share of the loop's")
		require.NoError(t, other.Unlock(lctx))
		cancelWait()
	}
	cancel()
	wait()
}

// TestHandOverYieldsBackToAClientWhoseWaitersPassed: ten waiters of one
// Client wait behind another Client's hold, and two goroutines of a third
// Client, refused after them, then take the lock in a loop. Once the hold
// is let go, the ten pass the lock among themselves and yield it to the
// third Client after eight hand-overs, which yields it back after as many
// of its own: each of the ten gets the lock within a few holds, far within
// the 10 s lease. (The first hand-over took their Client out of the
// waiting Clients, and nothing put it back: the third Client passed the
// lock around some 1 600 times while the waiters left slept out their
// lease.)
func TestHandOverYieldsBackToAClientWhoseWaitersPassed(t *testing.T) {
	const lease = 10 * time.Second
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	holder := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)).Mutex(name)
	waiters := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)).Mutex(name)
	loop := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)).Mutex(name)
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)
	var wg sync.WaitGroup
	waited := make([]time.Duration, 10)
	var released atomic.Int64
	for i := range waited {
		wg.Go(func() {
			lctx, err := waiters.Lock(t.Context())
			if assert.NoError(t, err) {
				waited[i] = time.Duration(time.Now().UnixNano() - released.Load())
				time.Sleep(5 * time.Millisecond) // a hold
				assert.NoError(t, waiters.Unlock(lctx))
			}
		})
	}
	waitParked(t, waiters, len(waited))
	stop, cancel := context.WithCancel(t.Context())
	wait := hotLoop(t, loop, 2, 5*time.Millisecond, stop)
	waitParked(t, loop, 2)
	released.Store(time.Now().UnixNano())
	require.NoError(t, holder.Unlock(held))
	wg.Wait()
	cancel()
	wait()
	t.Logf("the ten waiters got the lock after %v", waited)
	for i, d := range waited {
		assert.Less(t, d, 2*time.Second, "waiter %d", i)
	}
}

// TestHandOverSharedOwner: sixteen goroutines of one owner wait on a
// Mutex or FairMutex that another owner holds, of their Client (whose
// Unlock hands the lock to one of them) or of another (whose Unlock wakes
// one of them to take it). Either way the other fifteen then re-enter at
// once, one level each, rather than sleeping out the 30 s lease their
// timers were set for.
func TestHandOverSharedOwner(t *testing.T) {
	for _, k := range hotLockKinds {
		t.Run(k.name+"/SameClient", func(t *testing.T) { testSharedOwnerWaiters(t, k.open, true) })
		t.Run(k.name+"/OtherClient", func(t *testing.T) { testSharedOwnerWaiters(t, k.open, false) })
	}
}

func testSharedOwnerWaiters(t *testing.T, open func(c *rlock.Client, name string) hotLock, sameClient bool) {
	rec := &hooktest.Recorder{}
	c := sharedClient(t, rlock.WithHooks(rec))
	name := redistest.LockName(t)
	m := open(c, name)
	holder := m
	if !sameClient {
		holder = open(sharedClient(t), name)
	}
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)
	owner := sharedOwner(t, c, name)
	const goroutines = 16
	var wg sync.WaitGroup
	ctxs := make(chan context.Context, goroutines)
	for range goroutines {
		wg.Go(func() {
			lctx, err := m.Lock(owner)
			if assert.NoError(t, err) {
				ctxs <- lctx
			}
		})
	}
	waitWaits(t, rec, goroutines)

	start := time.Now()
	require.NoError(t, holder.Unlock(held))
	waitGroup(t, &wg, 5*time.Second, "every goroutine of the owner takes the lock")
	t.Logf("all %d levels taken %v after the Unlock", goroutines, time.Since(start))
	close(ctxs)
	n, err := m.HoldCount(owner)
	require.NoError(t, err)
	assert.Equal(t, goroutines, n, "one level per goroutine")
	for lctx := range ctxs {
		require.NoError(t, m.Unlock(lctx))
	}
	locked, err := m.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the last level's Unlock freed the lock")
}
