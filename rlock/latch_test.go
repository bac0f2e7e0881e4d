package rlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

func TestLatchCountsDown(t *testing.T) {
	l := sharedClient(t).CountDownLatch(redistest.LockName(t))
	require.NoError(t, l.Await(t.Context()), "an unset latch is open")
	require.NoError(t, l.CountDown(t.Context()), "counting an unset latch down does nothing")
	set, err := l.TrySetCount(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, set)
	set, err = l.TrySetCount(t.Context(), 5)
	require.NoError(t, err)
	assert.False(t, set, "a counting latch keeps its count")

	require.NoError(t, l.CountDown(t.Context()))
	n, err := l.Count(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Await(ctx), context.DeadlineExceeded, "Await waits while the count is above 0")

	require.NoError(t, l.CountDown(t.Context()))
	require.NoError(t, l.CountDown(t.Context()), "counting a latch at 0 down does nothing")
	n, err = l.Count(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	require.NoError(t, l.Await(t.Context()))
	set, err = l.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	assert.True(t, set, "a latch at 0 can be set again")
}

// latchKeys are the Redis names of count-down latch name under the default
// prefix.
func latchKeys(name string) keys.Keys {
	return keys.NewLatch(rlock.DefaultKeyPrefix, name)
}

// testLatchAwaitWakesAll: waiters on three Clients (two each) all return
// once the CountDown that reaches 0 wakes them.
func testLatchAwaitWakesAll(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	l := newRlock(t, s.Client(t)).CountDownLatch(name)
	_, err := l.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	type result struct {
		at  time.Time
		err error
	}
	woke := make(chan result, 6)
	for range 3 {
		w := newRlock(t, s.Client(t)).CountDownLatch(name)
		for range 2 {
			go func() {
				err := w.Await(t.Context())
				woke <- result{time.Now(), err}
			}()
		}
	}
	// The three Clients are subscribed. A second Await of a Client joins
	// its subscription, or, if it comes after the CountDown, finds 0.
	redistest.WaitSubscribers(t, s.Client(t), latchKeys(name).Channel, 3)
	start := time.Now()
	require.NoError(t, l.CountDown(t.Context()))
	var slowest time.Duration
	for range 6 {
		r := receive(t, woke, "an Await woken by the CountDown")
		require.NoError(t, r.err)
		slowest = max(slowest, r.at.Sub(start))
	}
	// An Await that the message did not wake would never return, which
	// receive catches; how soon they woke is for the log only (a few ms on
	// an idle machine).
	t.Logf("slowest of 6 Awaits on 3 Clients woke %v after the CountDown", slowest)
}

// TestLatchCountDownExactlyOnce: 100 CountDowns on four Clients, half with
// contexts that expire 0-3 ms after the call, many given up mid-request.
// Exactly the calls that returned nil counted: the count went down by
// their number, never by a given-up one, never twice.
func TestLatchCountDownExactlyOnce(t *testing.T) {
	name := redistest.LockName(t)
	const calls, start = 100, 1000
	var clients []drainable
	var latches []*rlock.CountDownLatch
	for range 4 {
		c := newDrainable(t, redistest.Setup{Node: redistest.Shared(t)})
		clients = append(clients, c)
		latches = append(latches, c.CountDownLatch(name))
	}
	_, err := latches[0].TrySetCount(t.Context(), start)
	require.NoError(t, err)
	var counted atomic.Int64
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			ctx := t.Context()
			if i%2 == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
				defer cancel()
			}
			if latches[i%4].CountDown(ctx) == nil {
				counted.Add(1)
			}
		})
	}
	wg.Wait()
	drain(t, clients...) // every late copy has arrived
	n, err := sharedClient(t).CountDownLatch(name).Count(t.Context())
	require.NoError(t, err)
	t.Logf("%d of %d CountDowns counted", counted.Load(), calls)
	assert.Equal(t, start-int(counted.Load()), n, "exactly the CountDowns that returned nil counted")
	assert.Greater(t, counted.Load(), int64(calls/2-1), "the calls without a deadline all counted")
}

func TestLatchAndSemaphoreBadInput(t *testing.T) {
	c := sharedClient(t)
	name := redistest.LockName(t)
	l, sem := c.CountDownLatch(name), c.Semaphore(name)
	_, err := l.TrySetCount(t.Context(), 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidArgument)
	_, err = sem.TrySetPermits(t.Context(), -1)
	assert.ErrorIs(t, err, rlock.ErrInvalidArgument)
	_, _, err = sem.TryAcquire(t.Context(), -time.Second, 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	_, _, err = sem.TryAcquire(t.Context(), 0, time.Millisecond)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)

	_, err = c.Semaphore("").Acquire(t.Context())
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	assert.ErrorIs(t, c.CountDownLatch("").Await(t.Context()), rlock.ErrInvalidName)
	var nilSem *rlock.Semaphore
	assert.ErrorIs(t, nilSem.Release(t.Context()), rlock.ErrNilClient)
	_, err = nilSem.Available(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	var nilLatch *rlock.CountDownLatch
	assert.ErrorIs(t, nilLatch.CountDown(t.Context()), rlock.ErrNilClient)
	var zero rlock.Semaphore
	assert.ErrorIs(t, zero.AddPermits(t.Context(), 1), rlock.ErrNilClient)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = sem.Acquire(nil)
	assert.ErrorIs(t, err, rlock.ErrNilContext)

	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = closed.Semaphore(name).Acquire(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed)
	assert.ErrorIs(t, closed.CountDownLatch(name).Await(t.Context()), rlock.ErrClosed)

	// The three resources of one name share no key.
	_, err = sem.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	_, err = l.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	mctx, err := c.Mutex(name).Lock(t.Context())
	require.NoError(t, err)
	sctx, err := sem.Acquire(mctx)
	require.NoError(t, err, "the Mutex of the same name is another resource")
	require.NoError(t, sem.Release(sctx))
	require.NoError(t, c.Mutex(name).Unlock(mctx))
}
