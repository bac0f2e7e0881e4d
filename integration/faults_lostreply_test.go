package integration

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// replyLoss loses the replies of rlock's scripts on one lock, as a
// connection that drops after Redis ran a command but before its reply
// arrived: rlock cannot tell whether the command ran, and must resend it
// under the same request id so that it is applied once.
type replyLoss struct {
	hash    string
	acquire atomic.Int32 // acquire calls still to run and then lose the reply of
	release atomic.Int32 // release calls still to run and then lose the reply of
	down    atomic.Bool  // other acquire and release calls fail unsent
	lost    atomic.Int32 // replies lost after their script ran
	// scripts names the script a command runs on the lock; nil means
	// scriptOn, which knows Mutex's.
	scripts func(cmd []string, hash string) string
}

// client returns a client on rc whose script calls on the lock go through
// l.
func (l *replyLoss) client(rc rueidis.Client) *hookClient {
	return &hookClient{Client: rc, hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		var pending *atomic.Int32
		on := scriptOn
		if l.scripts != nil {
			on = l.scripts
		}
		switch on(cmd, l.hash) {
		case acquireScript:
			pending = &l.acquire
		case releaseScript:
			pending = &l.release
		default:
			return run()
		}
		switch {
		case takeOne(pending):
			if res := run(); !ran(res) {
				pending.Add(1) // EVALSHA met NOSCRIPT: lose the EVAL's reply instead
				return res
			}
			l.lost.Add(1)
			return lostReply()
		case l.down.Load():
			return lostReply()
		}
		return run()
	}}
}

// takeOne takes one from n if n is positive, and reports whether it did.
func takeOne(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// TestFaultLostAcquireReply loses the reply of a first acquire and of a
// re-entry after each ran: the resend supersedes the lost call and sets the
// same absolute count, so the owner holds exactly the levels it asked for, with the token Redis
// issued, and after the last Unlock nothing is left and nothing renews.
func TestFaultLostAcquireReply(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	loss := &replyLoss{hash: lockKeys(name).Hash}
	mu := newRlock(t, loss.client(node.Client(t)), rlock.WithLeaseTime(watchdogLease)).Mutex(name)

	loss.acquire.Store(1)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err, "Lock whose first reply was lost")
	require.EqualValues(t, 1, loss.lost.Load(), "the first acquire ran and its reply was lost")
	assertHoldCount(t, ctx, mu, 1)
	token, ok := mu.FencingToken(ctx)
	require.True(t, ok)
	issued, err := raw.Do(t.Context(), raw.B().Get().Key(lockKeys(name).Token).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, issued, token, "the resend reports the token the first acquire was issued")

	loss.acquire.Store(1)
	inner, err := mu.Lock(ctx)
	require.NoError(t, err, "re-entry whose first reply was lost")
	require.EqualValues(t, 2, loss.lost.Load())
	assertHoldCount(t, ctx, mu, 2)

	require.NoError(t, mu.Unlock(inner))
	require.NoError(t, mu.Unlock(ctx))
	assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "two Unlocks free a lock taken twice")
	before := redistest.ScriptCalls(t, raw)
	time.Sleep(watchdogLease) // the thing under test: three renew intervals pass without a renewal
	assert.Equal(t, before, redistest.ScriptCalls(t, raw), "no orphan renewal after the Unlock")
}

// TestFaultLostUnlockReply loses the reply of an Unlock after it ran, once
// with a level left and once on the last level: the resend is answered from
// the count it carries, never applied twice, so a lock taken twice is held once after
// the first Unlock and freed by the second.
func TestFaultLostUnlockReply(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	loss := &replyLoss{hash: lockKeys(name).Hash}
	mu := newRlock(t, loss.client(node.Client(t))).Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	inner, err := mu.Lock(ctx)
	require.NoError(t, err)

	loss.release.Store(1)
	require.NoError(t, mu.Unlock(inner), "Unlock whose reply was lost")
	require.EqualValues(t, 1, loss.lost.Load(), "the release ran and its reply was lost")
	assertHoldCount(t, ctx, mu, 1)
	require.NoError(t, ctx.Err(), "one level is still held")

	loss.release.Store(1)
	require.NoError(t, mu.Unlock(ctx), "final Unlock whose reply was lost")
	require.EqualValues(t, 2, loss.lost.Load())
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the final Unlock ends the lock context")
	assert.NotErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "an Unlock is not a loss")
	assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "the lock is free")
	assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNotHeld, "nothing is left to unlock")
}

// TestFaultLostReplyNoResend loses a reply and then every resend for longer
// than the retry timeout: the call fails with the transport error, and the
// lease alone frees whatever Redis holds, with no renewal from this client.
func TestFaultLostReplyNoResend(t *testing.T) {
	const retry = 300 * time.Millisecond
	node := faultNode(t)
	raw := node.Client(t)
	// expires waits for the lock to expire, checking that no script ran
	// meanwhile: nothing renews it.
	expires := func(t *testing.T, name string) {
		t.Helper()
		before := redistest.ScriptCalls(t, raw)
		assert.Eventually(t, keyGone(t, raw, lockKeys(name).Hash), watchdogLease+time.Second, 20*time.Millisecond,
			"the lease frees the lock")
		assert.Equal(t, before, redistest.ScriptCalls(t, raw), "nothing renewed the lock")
	}

	t.Run("Acquire", func(t *testing.T) {
		name := redistest.LockName(t)
		loss := &replyLoss{hash: lockKeys(name).Hash}
		c := newRlock(t, loss.client(node.Client(t)), rlock.WithRetryTimeout(retry), rlock.WithLeaseTime(watchdogLease))
		mu := c.Mutex(name)
		loss.acquire.Store(1)
		loss.down.Store(true)

		start := time.Now()
		_, err := mu.Lock(t.Context())
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "Lock fails with the transport error")
		// The bound is the property, with a second for a loaded machine.
		assert.Less(t, time.Since(start), 2*retry+time.Second, "a resend and the settling each stop at the retry timeout")
		require.EqualValues(t, 1, loss.lost.Load(), "the first acquire ran")
		require.True(t, keyExists(t, raw, lockKeys(name).Hash), "the level it took is held in Redis")

		loss.down.Store(false)
		expires(t, name)
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err, "the lock can be taken once the lease ran out")
		require.NoError(t, mu.Unlock(ctx))
	})

	t.Run("Unlock", func(t *testing.T) {
		name := redistest.LockName(t)
		loss := &replyLoss{hash: lockKeys(name).Hash}
		mu := newRlock(t, loss.client(node.Client(t)), rlock.WithRetryTimeout(retry), rlock.WithLeaseTime(watchdogLease)).Mutex(name)
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err)
		loss.down.Store(true)

		start := time.Now()
		assert.ErrorIs(t, mu.Unlock(ctx), io.ErrUnexpectedEOF, "Unlock fails with the transport error")
		// The bound is the property, with a second for a loaded machine.
		assert.Less(t, time.Since(start), retry+time.Second, "Unlock stops at the retry timeout")
		assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "a failed Unlock ends the lock context as lost")
		require.True(t, keyExists(t, raw, lockKeys(name).Hash), "the release never reached Redis")
		expires(t, name)
	})
}

// TestFaultLostReentryThenForceUnlock loses the reply of a re-entry and
// every call after it, so that its outcome stays unsettled, and then an
// operator force-unlocks the lock: the final Unlock, which supersedes the
// lost re-entry, finds the owner holds nothing. A re-entry never frees a
// lock, so the owner lost it: Unlock reports ErrNotHeld, and the lock
// context ends as lost. (Only a release's own lost call may have freed it,
// which TestFaultLostUnlockReply covers.)
func TestFaultLostReentryThenForceUnlock(t *testing.T) {
	const retry = 300 * time.Millisecond
	node := faultNode(t)
	name := redistest.LockName(t)
	loss := &replyLoss{hash: lockKeys(name).Hash}
	mu := newRlock(t, loss.client(node.Client(t)), rlock.WithRetryTimeout(retry)).Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	loss.acquire.Store(1)
	loss.down.Store(true)
	_, err = mu.Lock(ctx)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the re-entry fails with the transport error")
	require.EqualValues(t, 1, loss.lost.Load(), "the re-entry ran and its reply was lost")
	loss.down.Store(false)
	require.NoError(t, ctx.Err(), "a failed re-entry leaves the hold")

	forced, err := newRlock(t, node.Client(t)).Mutex(name).ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, forced, "the operator freed the held lock")

	assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNotHeld, "the owner lost the lock to ForceUnlock")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "the lock context ends as lost, not as unlocked")
}
