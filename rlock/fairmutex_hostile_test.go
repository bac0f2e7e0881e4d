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
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestFairMutexBadInput: bad handles, names, durations and contexts get
// matchable errors, never a panic; so do calls after Close and an Unlock by
// an owner that does not hold the lock.
func TestFairMutexBadInput(t *testing.T) {
	ctx := t.Context()
	var nilClient *rlock.Client
	var zero rlock.FairMutex
	var nilHandle *rlock.FairMutex
	for what, fm := range map[string]*rlock.FairMutex{
		"nil Client": nilClient.FairMutex("x"), "zero value": &zero, "nil handle": nilHandle,
	} {
		_, err := fm.Lock(ctx)
		assert.ErrorIs(t, err, rlock.ErrNilClient, what)
		assert.ErrorIs(t, fm.Unlock(ctx), rlock.ErrNilClient, what)
		_, err = fm.ForceUnlock(ctx)
		assert.ErrorIs(t, err, rlock.ErrNilClient, what)
		_, err = fm.IsLocked(ctx)
		assert.ErrorIs(t, err, rlock.ErrNilClient, what)
		_, ok := fm.FencingToken(ctx)
		assert.False(t, ok, what)
	}
	assert.Empty(t, nilHandle.Name())

	c := sharedClient(t)
	_, err := c.FairMutex("").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	fm := c.FairMutex(redistest.LockName(t))
	_, err = fm.LockFor(ctx, -time.Second)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	_, _, err = fm.TryLock(ctx, -time.Second, 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = fm.Lock(nil)
	assert.ErrorIs(t, err, rlock.ErrNilContext)
	assert.ErrorIs(t, fm.Unlock(ctx), rlock.ErrNotHeld, "a context without an owner")

	held, err := fm.Lock(ctx)
	require.NoError(t, err)
	other := sharedClient(t).FairMutex(fm.Name())
	assert.ErrorIs(t, other.Unlock(held), rlock.ErrNotHeld, "another Client's owner does not hold it")
	require.NoError(t, fm.Unlock(held))
	assert.ErrorIs(t, fm.Unlock(held), rlock.ErrNotHeld, "after the final Unlock")

	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = closed.FairMutex(fm.Name()).Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrClosed)
}

// TestFairHostileSharedOwner: 16 goroutines share one owner context that
// holds nothing and Lock at once behind another holder. They queue as one
// owner; the lock handed over to it is taken by one of them and re-entered
// by the others, so all 16 hold it together, as goroutines of one Java
// thread would, and the last Unlock hands it on to the next owner.
func TestFairHostileSharedOwner(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	first := newRlock(t, s.Client(t)).FairMutex(name)
	held, err := first.Lock(t.Context())
	require.NoError(t, err)

	rec := &hooktest.Recorder{}
	c := newRlock(t, s.Client(t), rlock.WithHooks(rec))
	owner := sharedOwner(t, c, name)
	fm := c.FairMutex(name)
	const goroutines = 16
	var wg sync.WaitGroup
	ctxs := make(chan context.Context, goroutines)
	for range goroutines {
		wg.Go(func() {
			lctx, err := fm.Lock(owner)
			if assert.NoError(t, err) {
				ctxs <- lctx
			}
		})
	}
	// Each found the lock held. A call's wait begins at its first refused
	// attempt, which does not queue it: its ask in the queue follows.
	waitWaits(t, rec, goroutines)
	waitQueued(t, admin, name, 1) // one owner, one place in the queue
	next := newRlock(t, s.Client(t)).FairMutex(name)
	got := lockAsync(t, next)
	waitQueued(t, admin, name, 2)

	require.NoError(t, first.Unlock(held))
	waitGroup(t, &wg, 10*time.Second, "every goroutine of the owner takes the lock")
	close(ctxs)
	n, err := fm.HoldCount(owner)
	require.NoError(t, err)
	assert.Equal(t, goroutines, n, "one level per goroutine")
	select {
	case <-got:
		t.Fatal("the next owner took the lock while the shared owner held it")
	default:
	}
	for lctx := range ctxs {
		require.NoError(t, fm.Unlock(lctx))
	}
	require.NoError(t, next.Unlock(receive(t, got, "the next owner's Lock after the shared owner's last Unlock")))
}

// TestFairHostileCancelMidRequest: 40 Lock calls on a contended fair lock
// get contexts that end after 0 to 4 ms, in the middle of their requests
// as often as not. None of them takes effect later: once they have all
// returned and the holders have let go, nobody is left in the queue and
// the lock is free.
func TestFairHostileCancelMidRequest(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	clients := []drainable{newDrainable(t, s), newDrainable(t, s)}
	var wg sync.WaitGroup
	var took, gaveUp atomic.Int64
	for i := range 40 {
		fm := clients[i%2].FairMutex(name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(5))*time.Millisecond)
			defer cancel()
			lctx, err := fm.Lock(ctx)
			if err != nil {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				gaveUp.Add(1)
				return
			}
			took.Add(1)
			assert.NoError(t, fm.Unlock(lctx))
		})
	}
	waitGroup(t, &wg, redistest.Patience, "every Lock returns")
	assert.Positive(t, gaveUp.Load(), "some calls gave up")
	drain(t, clients...) // every request given up on has landed
	assert.Empty(t, queued(t, admin, name), "no call that gave up stays queued")
	fresh := newRlock(t, s.Client(t)).FairMutex(name)
	locked, err := fresh.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "no call that gave up holds the lock (%d took it)", took.Load())
	lctx, ok, err := fresh.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, fresh.Unlock(lctx))
}

// TestFairHostileCloseWhileEverythingRuns: a Client whose owners hold,
// queue and re-enter a fair lock is closed while another Client's owners
// do the same. Its calls end with ErrClosed (or their own result), its
// entries drop out within its lease, and the other Client's owners go on
// to take the lock, all of them, in turn.
func TestFairHostileCloseWhileEverythingRuns(t *testing.T) {
	const lease = time.Second
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	rec := &hooktest.Recorder{}
	c, err := rlock.New(s.Client(t), rlock.WithLeaseTime(lease), rlock.WithHooks(rec))
	require.NoError(t, err)
	rival := newRlock(t, s.Client(t), rlock.WithLeaseTime(lease))

	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []error
	run := func(fm *rlock.FairMutex, stop func() bool) {
		for !stop() {
			lctx, err := fm.Lock(t.Context())
			if err == nil {
				var inner context.Context
				if inner, err = fm.Lock(lctx); err == nil {
					time.Sleep(time.Millisecond) // a hold for Close to meet
					err = errors.Join(fm.Unlock(inner), fm.Unlock(lctx))
				}
			}
			if err != nil && !errors.Is(err, rlock.ErrClosed) && !errors.Is(err, rlock.ErrNotHeld) {
				mu.Lock()
				bad = append(bad, err)
				mu.Unlock()
			}
			if errors.Is(err, rlock.ErrClosed) {
				return
			}
		}
	}
	var rounds atomic.Int64
	for range 8 {
		wg.Go(func() { run(c.FairMutex(name), func() bool { return false }) })
		wg.Go(func() { run(rival.FairMutex(name), func() bool { return rounds.Add(1) > 400 }) })
	}
	rec.WaitFor(t, "the closing Client's owners take the lock", func(e hooktest.Events) bool { return len(e.Starts) >= 5 })
	// Close wakes the calls and stops its goroutines in milliseconds; the
	// bound, loose enough for a loaded machine, catches a Close that waits
	// for the calls or for their locks instead.
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 5*time.Second, "Close returns promptly")
	waitGroup(t, &wg, redistest.Patience, "every call returns, the rival's after its rounds")
	mu.Lock()
	assert.Empty(t, bad, "calls ended only with their own result or ErrClosed")
	mu.Unlock()
	assert.Greater(t, rounds.Load(), int64(400), "the rival's owners went on after the Close")
	// The closed Client's entries drop out once their own leases (1 s) run
	// out, which Patience is far beyond: an entry nothing renews goes.
	waitQueued(t, admin, name, 0)
	lctx, ok, err := rival.FairMutex(name).TryLock(t.Context(), redistest.Patience, 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, rival.FairMutex(name).Unlock(lctx))
}
