package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Fault modes of the calls on one key: each request's first call runs or
// not, and its reply is lost once its caller's deadline passed; the calls
// that settle it get no answer (Redis unreachable for their retry timeout).
const (
	passThrough  = iota
	ranReplyLost // the request's call runs in Redis; its reply and the settling calls' are lost
	neverSent    // the request's call never leaves; the settling calls run
)

// TestFaultOutcomeUnknownIsTold: a CountDown or an AcquirePermit whose
// call ran with its reply lost, and whose settling call got no answer
// either, may have applied: its error wraps ErrOutcomeUnknown, beside the
// caller's ctx.Err(). One whose call never left, settled, fails without
// it: that one did not apply and will not. (A latch's count never
// expires: a caller that took the first for the second and counted down
// again would open the latch early.)
func TestFaultOutcomeUnknownIsTold(t *testing.T) {
	const retry = 200 * time.Millisecond
	node := faultNode(t)
	raw := node.Client(t)

	t.Run("CountDown", func(t *testing.T) {
		name := redistest.LockName(t)
		k := keys.NewLatch(rlock.DefaultKeyPrefix, name)
		var mode atomic.Int32
		// A count-down call has ARGV[3] (cmd[9]) '1'; its settling call '0'.
		hook := &hookClient{Client: node.Client(t), hook: func(ctx context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
			m := mode.Load()
			if len(cmd) < 10 || cmd[0] != "EVALSHA" || cmd[3] != k.Hash || m == passThrough {
				return run()
			}
			settling := cmd[9] == "0"
			switch {
			case settling && m == ranReplyLost:
				return lostReply()
			case settling:
				return run()
			case m == ranReplyLost:
				run()
			}
			<-ctx.Done()
			return lostReply()
		}}
		latch := newRlock(t, hook, rlock.WithRetryTimeout(retry)).CountDownLatch(name)
		ok, err := latch.TrySetCount(t.Context(), 3)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, latch.CountDown(t.Context()), "a CountDown that loads the script")
		count := func() int {
			n, err := newRlock(t, raw).CountDownLatch(name).Count(t.Context())
			require.NoError(t, err)
			return n
		}

		countDown := func(m int32) error {
			mode.Store(m)
			defer mode.Store(passThrough)
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			return latch.CountDown(ctx)
		}
		err = countDown(neverSent)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, rlock.ErrOutcomeUnknown, "settled: it did not count")
		assert.Equal(t, 2, count(), "the CountDown never sent did not count")

		err = countDown(ranReplyLost)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, rlock.ErrOutcomeUnknown, "its settling call got no answer: %v", err)
		assert.Equal(t, 1, count(), "it counted, as the error allows")
	})

	t.Run("AcquirePermit", func(t *testing.T) {
		name := redistest.LockName(t)
		k := keys.NewSemaphore(rlock.DefaultKeyPrefix, name)
		var mode atomic.Int32
		hook := &hookClient{Client: node.Client(t), hook: func(ctx context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
			m := mode.Load()
			if m == passThrough || cmd[0] != "EVALSHA" {
				return run()
			}
			switch scriptOn(cmd, k.Hash) {
			case acquireScript:
				if m == ranReplyLost {
					run()
				}
				<-ctx.Done()
				return lostReply()
			case releaseScript:
				if m == ranReplyLost {
					return lostReply()
				}
			}
			return run()
		}}
		sem := newRlock(t, hook, rlock.WithRetryTimeout(retry)).Semaphore(name)
		_, err := sem.TrySetPermits(t.Context(), 2)
		require.NoError(t, err)
		id, err := sem.AcquirePermit(t.Context(), time.Minute) // loads the scripts
		require.NoError(t, err)
		require.NoError(t, sem.ReleasePermit(t.Context(), id))

		acquirePermit := func(m int32) error {
			mode.Store(m)
			defer mode.Store(passThrough)
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, err := sem.AcquirePermit(ctx, time.Minute)
			return err
		}
		err = acquirePermit(neverSent)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, rlock.ErrOutcomeUnknown, "settled: it holds nothing")
		assert.Equal(t, 2, available(t, sem), "the AcquirePermit never sent holds nothing")

		err = acquirePermit(ranReplyLost)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, rlock.ErrOutcomeUnknown, "its settling call got no answer: %v", err)
		assert.Equal(t, 1, available(t, sem), "a permit is held until its lease ends, as the error allows")
	})
}
