package rlock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestResentReentryOverAFreshTakeIsALoss: an owner holds a Mutex at one
// level; another Client force-unlocks it, takes it and lets it go, so the
// lock is free and the owner's Client does not know. A second goroutine of
// the owner re-enters, asking for two levels: Redis takes the free lock
// afresh for the owner, at one level under a new fencing token, and that
// reply is lost; the resend finds the owner holding and re-enters, to two
// levels. The count is the one a re-entry of the old hold would have, but
// the token is not: the old hold ended with ErrLockLost, and the goroutine
// holds a new one, at one level, under the new token.
func TestResentReentryOverAFreshTakeIsALoss(t *testing.T) {
	c, hook, name, ks, raw := newHookedClient(t)
	m := c.Mutex(name)
	octx, _ := withOwner(t.Context())
	held, err := m.Lock(octx)
	require.NoError(t, err)
	oldToken, _ := m.FencingToken(held)

	om := openClient(t, redistest.Shared(t)).Mutex(name)
	_, err = om.ForceUnlock(t.Context())
	require.NoError(t, err)
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
