package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestSemaphoreAndLatch runs the Semaphore suite, and the latch test that
// needs several backends, on every Redis backend the harness
// offers, Cluster included.
func TestSemaphoreAndLatch(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"AcquireRelease":       testSemaphoreAcquireRelease,
		"SeveralOnOneContext":  testSemaphoreSeveralOnOneContext,
		"ReleaseWakesWaiter":   testSemaphoreReleaseWakesWaiter,
		"AddPermitsWakesAll":   testSemaphoreAddPermitsWakesAll,
		"FixedLeaseComesBack":  testSemaphoreFixedLeaseComesBack,
		"DeadHolderComesBack":  testSemaphoreDeadHolderComesBack,
		"WatchdogKeepsPermits": testSemaphoreWatchdogKeepsPermits,
		"LatchAwaitWakesAll":   testLatchAwaitWakesAll,
		"PermitTravels":        testPermitTravels,
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

// semaphoreKeys are the Redis names of semaphore name under the default
// prefix.
func semaphoreKeys(name string) keys.Keys {
	return keys.NewSemaphore(rlock.DefaultKeyPrefix, name)
}

// available reads sem's free permits.
func available(t *testing.T, sem *rlock.Semaphore) int {
	t.Helper()
	n, err := sem.Available(t.Context())
	require.NoError(t, err)
	return n
}

func testSemaphoreAcquireRelease(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	sem := newRlock(t, rc).Semaphore(redistest.LockName(t))
	set, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, set, "the first TrySetPermits sets them")
	set, err = sem.TrySetPermits(t.Context(), 5)
	require.NoError(t, err)
	assert.False(t, set, "a second TrySetPermits changes nothing")
	assert.Equal(t, 2, available(t, sem))

	a, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	b, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, available(t, sem))
	_, ok, err := sem.TryAcquire(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "no third permit of two")
	_, ok, err = sem.TryAcquire(t.Context(), 50*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "no third permit within a wait either")

	require.NoError(t, sem.Release(a))
	assert.Equal(t, 1, available(t, sem))
	assert.ErrorIs(t, a.Err(), context.Canceled, "the last Release ends the permit's context")
	assert.ErrorIs(t, sem.Release(a), rlock.ErrNotHeld, "a released context holds no permit")
	assert.ErrorIs(t, sem.Release(t.Context()), rlock.ErrNotHeld, "a context without an owner holds none")
	require.NoError(t, sem.Release(b))
	assert.Equal(t, 2, available(t, sem))
	assert.False(t, exists(t, rc, semaphoreKeys(sem.Name()).Hash), "no holder left: the holders hash is gone")

	require.NoError(t, sem.AddPermits(t.Context(), -3))
	assert.Equal(t, -1, available(t, sem), "permits can be taken below 0")
	require.NoError(t, sem.AddPermits(t.Context(), 2))
	assert.Equal(t, 1, available(t, sem))
}

func testSemaphoreSeveralOnOneContext(t *testing.T, s redistest.Setup) {
	sem := newRlock(t, s.Client(t)).Semaphore(redistest.LockName(t))
	_, err := sem.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)
	ctx, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	again, err := sem.Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, ctx, again, "a context that carries a permit gets one more, and stays the context")
	assert.Equal(t, 1, available(t, sem))
	_, ok, err := sem.TryAcquire(ctx, 0, 0)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = sem.TryAcquire(ctx, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "one context gets no more permits than there are")

	for i := 3; i > 0; i-- {
		assert.NoError(t, ctx.Err(), "the context lives while it carries a permit")
		require.NoError(t, sem.Release(ctx))
		assert.Equal(t, 3-i+1, available(t, sem))
	}
	assert.Error(t, ctx.Err(), "the last Release ends the context")
	assert.ErrorIs(t, sem.Release(ctx), rlock.ErrNotHeld)
}

func testSemaphoreReleaseWakesWaiter(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	sem := newRlock(t, s.Client(t)).Semaphore(name)
	other := newRlock(t, s.Client(t)).Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	held, err := sem.Acquire(t.Context())
	require.NoError(t, err)

	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		ctx, err := other.Acquire(t.Context())
		at := time.Now()
		if err == nil {
			err = other.Release(ctx) // before the test ends and closes other
		}
		got <- result{at, err}
	}()
	redistest.WaitSubscribers(t, s.Client(t), semaphoreKeys(name).Channel, 1) // the waiter is asleep on the channel
	released := time.Now()
	require.NoError(t, sem.Release(held))
	r := receive(t, got, "the waiter's Acquire of the permit that came back")
	require.NoError(t, r.err)
	// The lease is 30 s: only the release's message wakes it this soon,
	// even on a loaded machine.
	assert.Less(t, r.at.Sub(released), 3*time.Second, "the waiter wakes on the release")
}

func testSemaphoreAddPermitsWakesAll(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	const waiters = 3
	done := make(chan error, waiters)
	for range waiters {
		sem := newRlock(t, s.Client(t)).Semaphore(name)
		go func() {
			ctx, err := sem.Acquire(t.Context())
			if err == nil {
				err = sem.Release(ctx)
			}
			done <- err
		}()
	}
	// Refused (no permits were ever set), each Client subscribed.
	redistest.WaitSubscribers(t, s.Client(t), semaphoreKeys(name).Channel, waiters)
	sem := newRlock(t, s.Client(t)).Semaphore(name)
	require.NoError(t, sem.AddPermits(t.Context(), waiters))
	for range waiters {
		assert.NoError(t, receive(t, done, "a waiter woken by AddPermits"))
	}
	assert.Equal(t, waiters, available(t, sem))
}

func testSemaphoreFixedLeaseComesBack(t *testing.T, s redistest.Setup) {
	sem := newRlock(t, s.Client(t)).Semaphore(redistest.LockName(t))
	_, err := sem.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	ctx, ok, err := sem.TryAcquire(t.Context(), 0, 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	start := time.Now()
	other, ok, err := sem.TryAcquire(t.Context(), redistest.Patience, 0)
	require.NoError(t, err)
	require.True(t, ok, "the permit comes back when its lease ends")
	// Ten times the 300 ms lease, for a loaded machine: a permit that
	// outlived its lease would keep the waiter until Patience.
	assert.Less(t, time.Since(start), 3*time.Second)
	// The permit's local deadline (its lease less the drift allowance)
	// passed before Redis let the permit go; the timer that ends its
	// context at that deadline may run a little late on a loaded machine,
	// so wait for the context rather than expect it done already.
	select {
	case <-ctx.Done():
	case <-time.After(redistest.Patience):
		t.Fatal("the expired permit's context is still live")
	}
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "the expired permit's context says it is lost")
	assert.ErrorIs(t, sem.Release(ctx), rlock.ErrNotHeld)
	require.NoError(t, sem.Release(other))
}

// testSemaphoreDeadHolderComesBack: a Client that stops renewing (Close is
// what a dead process looks like to Redis) loses its permits within their
// lease, while a live holder beside it keeps its own.
func testSemaphoreDeadHolderComesBack(t *testing.T, s redistest.Setup) {
	const lease = watchdogLease
	name := redistest.LockName(t)
	live := newRlock(t, s.Client(t), rlock.WithLeaseTime(lease)).Semaphore(name)
	c, err := rlock.New(s.Client(t), rlock.WithLeaseTime(lease))
	require.NoError(t, err)
	dead := c.Semaphore(name)
	_, err = live.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	kept, err := live.Acquire(t.Context())
	require.NoError(t, err)
	_, err = dead.Acquire(t.Context())
	require.NoError(t, err)
	_, ok, err := dead.TryAcquire(t.Context(), 0, 0)
	require.NoError(t, err)
	require.False(t, ok, "both permits are held")
	require.NoError(t, c.Close())

	start := time.Now()
	ctx, ok, err := live.TryAcquire(t.Context(), 10*lease, 0)
	require.NoError(t, err)
	require.True(t, ok, "the dead holder's permit comes back")
	assert.Less(t, time.Since(start), lease+time.Second, "within its lease (and a second for a loaded machine)")
	time.Sleep(2 * lease) // the thing under test: two leases pass, and only renewals keep the live permit
	assert.NoError(t, kept.Err(), "the live holder's permit was renewed meanwhile")
	assert.Equal(t, 0, available(t, live))
	require.NoError(t, live.Release(ctx))
	require.NoError(t, live.Release(kept))
}

func testSemaphoreWatchdogKeepsPermits(t *testing.T, s redistest.Setup) {
	sem := newRlock(t, s.Client(t), rlock.WithLeaseTime(watchdogLease)).Semaphore(redistest.LockName(t))
	_, err := sem.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	ctx, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	time.Sleep(3 * watchdogLease) // the thing under test: three leases pass, and only renewals keep the permit
	assert.NoError(t, ctx.Err(), "the watchdog renews the permit")
	assert.Equal(t, 0, available(t, sem), "and Redis still counts it")
	require.NoError(t, sem.Release(ctx))
	assert.Equal(t, 1, available(t, sem))
}
