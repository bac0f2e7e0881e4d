package rlock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
)

// TestResentReentryOverAFreshTakeIsALoss: an owner holds a Mutex at one
// level; another Client force-unlocks it, takes it and lets it go, so the
// lock is free and the owner's Client does not know. A second goroutine of
// the owner re-enters, asking for two levels, and the first send's reply
// is lost. Neither that send nor the resend takes the free lock (a
// re-entry of a hold Redis lost takes nothing); had one taken it at one
// level, a resend re-entering that would have got the count a re-entry of
// the old hold would have, under another token. The old hold ends with
// ErrLockLost, and the goroutine holds a new one, at one level, under a
// new token.
func TestResentReentryOverAFreshTakeIsALoss(t *testing.T) {
	m, hook, octx, held, om, ks, raw := heldThenForced(t)
	oldToken, _ := m.FencingToken(held)
	taken, err := om.Lock(t.Context())
	require.NoError(t, err)
	otherToken, _ := om.FencingToken(taken)
	require.NoError(t, om.Unlock(taken))
	require.NoError(t, held.Err(), "the owner's Client has not learnt of the loss yet")

	var lost atomic.Bool
	hook.mu.Lock()
	hook.acquire = func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult {
		res := send()
		if lost.CompareAndSwap(false, true) {
			return rueidis.NewErrorResult(errors.New("connection reset: the reply is lost"))
		}
		return res
	}
	hook.mu.Unlock()
	lctx, err := m.Lock(octx)
	require.NoError(t, err)
	require.True(t, lost.Load(), "the first send's reply was lost")

	assert.ErrorIs(t, context.Cause(held), ErrLockLost, "the old hold ended")
	token, _ := m.FencingToken(lctx)
	assert.Greater(t, token, otherToken, "the new hold's token, not the old one's %d", oldToken)
	n, err := m.HoldCount(lctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a new hold at one level")
	assert.ErrorIs(t, m.Unlock(held), ErrNotHeld, "the old hold has nothing to leave")
	require.NoError(t, m.Unlock(lctx))
	locked, err := raw.Do(t.Context(), raw.B().Exists().Key(ks.Hash).Build()).AsBool()
	require.NoError(t, err)
	assert.False(t, locked, "no level is left behind")
}

// TestGivenUpReentryOverAFreeLockEndsTheHold: as above, the lock is free
// and the owner's Client does not know; the re-entry's caller gives up
// with its reply missing, so the request is settled by a release to the
// one level the owner held. Had the re-entry taken the free lock afresh,
// that release would find one level and leave it: the lost hold would run
// on, under its old token, over a level nobody releases. Redis takes
// nothing for a re-entry of a hold it lost: the release finds nothing, the
// old hold ends with ErrLockLost, and no level is left behind.
func TestGivenUpReentryOverAFreeLockEndsTheHold(t *testing.T) {
	m, hook, octx, held, _, ks, raw := heldThenForced(t)

	ctx, giveUp := context.WithCancel(octx)
	defer giveUp()
	var sent atomic.Int32
	hook.mu.Lock()
	hook.acquire = func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult {
		sent.Add(1)
		send()
		giveUp()
		return rueidis.NewErrorResult(errors.New("connection reset: the reply is lost"))
	}
	hook.mu.Unlock()
	_, err := m.Lock(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(1), sent.Load(), "the re-entry was sent once, then given up")

	assert.ErrorIs(t, context.Cause(held), ErrLockLost, "the old hold ended")
	assert.ErrorIs(t, m.Unlock(held), ErrNotHeld, "the old hold has nothing to leave")
	locked, err := raw.Do(t.Context(), raw.B().Exists().Key(ks.Hash).Build()).AsBool()
	require.NoError(t, err)
	assert.False(t, locked, "no level is left behind")
}

// heldThenForced locks a Mutex, through a hooked Client, for an owner of
// its own (octx carries it; held is the lock context), and force-unlocks
// it through another Client, whose handle of the lock is other: the
// owner's Client does not know, and held is still live.
func heldThenForced(t *testing.T) (m *Mutex, hook *requestHook, octx, held context.Context, other *Mutex, ks keys.Keys, raw rueidis.Client) {
	c, hook, name, ks, raw := newHookedClient(t)
	m = c.Mutex(name)
	octx, _ = withOwner(t.Context())
	held, err := m.Lock(octx)
	require.NoError(t, err)
	other = openClient(t, redistest.Shared(t)).Mutex(name)
	_, err = other.ForceUnlock(t.Context())
	require.NoError(t, err)
	require.NoError(t, held.Err(), "the owner's Client has not learnt of the loss yet")
	return m, hook, octx, held, other, ks, raw
}
