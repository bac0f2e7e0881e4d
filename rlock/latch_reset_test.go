package rlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestLatchAwaitReturnsThoughSetAgain: a latch reused as a barrier, round
// after round: another Client counts it down to 0 and at once sets it
// again for the next round. Every Await that was waiting when the count
// reached 0 returns, though the count it reads when woken is the next
// round's. (It read the count again and slept on: 15 rounds of 20 missed
// their wake-up.)
func TestLatchAwaitReturnsThoughSetAgain(t *testing.T) {
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	other := newRlock(t, node.Client(t)).CountDownLatch(name)
	waiter := newRlock(t, node.Client(t)).CountDownLatch(name)
	const rounds = 10
	for round := range rounds {
		setOne(t, other)
		done := awaitInBackground(t, node.Client(t), waiter)
		require.NoError(t, other.CountDown(t.Context()))
		setOne(t, other) // the next round, before the Await reads
		require.NoError(t, receive(t, done, "the Await"), "round %d: an Await waiting when the count reached 0 returns", round)
		require.NoError(t, other.CountDown(t.Context())) // back to 0 for the next round
	}
}

// TestLatchAwaitReturnsThoughSetAgainBeforeItsRead: as above, with the
// woken Await's read of the latch held back until the next round's count
// is set, every time: the read finds the latch opened since it began.
func TestLatchAwaitReturnsThoughSetAgainBeforeItsRead(t *testing.T) {
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	slow := &slowReads{Client: node.Client(t), key: latchKeys(name).Hash, release: make(chan struct{})}
	waiter := newRlock(t, slow).CountDownLatch(name)
	other := newRlock(t, node.Client(t)).CountDownLatch(name)
	setOne(t, other)
	done := awaitInBackground(t, node.Client(t), waiter)
	slow.hold.Store(true)

	require.NoError(t, other.CountDown(t.Context()), "the count reaches 0: every Await wakes")
	setOne(t, other)
	close(slow.release)
	assert.NoError(t, receive(t, done, "the Await"), "an Await waiting when the count reached 0 returns")
}

// slowReads holds back every HMGET of key, once hold is set, until
// release is closed.
type slowReads struct {
	rueidis.Client
	key     string
	hold    atomic.Bool
	release chan struct{}
}

func (s *slowReads) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if args := cmd.Commands(); s.hold.Load() && len(args) >= 2 && args[0] == "HMGET" && args[1] == s.key {
		<-s.release
	}
	return s.Client.Do(ctx, cmd)
}

// setOne sets latch, at 0, to 1.
func setOne(t *testing.T, latch *rlock.CountDownLatch) {
	t.Helper()
	set, err := latch.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, set)
}

// awaitInBackground starts waiter's Await, bounded by 5 s, and returns
// once it sleeps (subscribed on rc's server, and past its first read),
// with where its result will come.
func awaitInBackground(t *testing.T, rc rueidis.Client, waiter *rlock.CountDownLatch) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		done <- waiter.Await(ctx)
	}()
	redistest.WaitSubscribers(t, rc, latchKeys(waiter.Name()).Channel, 1)
	time.Sleep(50 * time.Millisecond) // the Await read 1 and sleeps
	return done
}
