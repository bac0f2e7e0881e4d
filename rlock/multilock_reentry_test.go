package rlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// nodeLevels returns the count of the one owner field of lock name on
// node i ("" when none).
func nodeLevels(t *testing.T, ms masters, i int, name string) string {
	for field, v := range partFields(t, ms.raw[i], name) {
		if field != "waiters" && !strings.Contains(field, "#") {
			return v
		}
	}
	return ""
}

// TestRedLockRetakeAfterReentryTookPart: a RedLock part is lost to a
// rival (retaking starts, refused). The rival lets go and the owner
// re-enters at once: the re-entry takes node 0 as a new part, at one
// level. The retake still running brings it only as deep as the hold (it
// went deeper, the final Unlock left it held, and the hold ended as lost
// rather than unlocked), and the final Unlock frees every node for good.
func TestRedLockRetakeAfterReentryTookPart(t *testing.T) {
	const lease = retakeLease
	ms, name, rl, ctxs := heldRedLock(t, 1)
	ctx, k := ctxs[0], lockKeys(name)
	stealPart(t, ms, name)
	// Just after a refused retake, the rival lets go and the owner
	// re-enters (benchmark-style pacing: the window is the thing tested).
	time.Sleep(lease / 3 / 4)
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Del().Key(k.Hash).Build()).Error())
	inner, err := rl.Lock(ctx)
	require.NoError(t, err)
	time.Sleep(lease) // the thing tested: a retake period or more passes
	assert.Equal(t, "2", nodeLevels(t, ms, 0, name), "node 0 is as deep as the hold")

	require.NoError(t, rl.Unlock(inner))
	require.NoError(t, ctx.Err())
	require.NoError(t, rl.Unlock(ctx))
	assert.ErrorIs(t, context.Cause(ctx), context.Canceled, "the final Unlock ends the hold as unlocked: %v", context.Cause(ctx))
	assert.NotErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	assert.Zero(t, ms.held(t, name), "the final Unlock frees every node")
	time.Sleep(2 * lease) // the thing tested: nothing takes a node back after the final Unlock
	assert.Zero(t, ms.held(t, name), "no node is taken again after the final Unlock")
	assert.False(t, retaking(), "nothing retakes after the final Unlock")
}

// TestRedLockNestedUnlockLeavesNeverHeldNode: a RedLock whose node 0 was
// held by a rival at Lock time (so the hold never had a part there) is
// locked twice; the nested Unlock retakes no part there (it did, and the
// retake then deepened a later re-entry's part, so that the final Unlock
// did not free every node). The rival lets go, the owner re-enters, and
// the final Unlock frees every node for good.
func TestRedLockNestedUnlockLeavesNeverHeldNode(t *testing.T) {
	const lease = retakeLease
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	k := lockKeys(name)
	rival := `redis.call('hset', KEYS[1], 'rival', 1); redis.call('pexpire', KEYS[1], 60000); return 1`
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Eval().Script(rival).Numkeys(1).Key(k.Hash).Build()).Error())
	rl := rlock.NewRedLock(ms.mutexes(t, name, rlock.WithLeaseTime(lease))...)
	ctx, err := rl.Lock(t.Context())
	require.NoError(t, err)
	inner, err := rl.Lock(ctx)
	require.NoError(t, err)
	require.False(t, retaking(), "node 0 was never held: nothing to retake")
	require.NoError(t, rl.Unlock(inner))
	require.NoError(t, ctx.Err())
	assert.False(t, retaking(), "the nested Unlock retakes no node the hold never held")

	time.Sleep(lease / 3 / 4) // pacing, as in TestRedLockRetakeAfterReentryTookPart
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Del().Key(k.Hash).Build()).Error())
	inner, err = rl.Lock(ctx)
	require.NoError(t, err)
	time.Sleep(lease) // the thing tested: a retake period or more passes
	require.NoError(t, rl.Unlock(inner))
	require.NoError(t, rl.Unlock(ctx))
	assert.NotErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "cause: %v", context.Cause(ctx))
	assert.Zero(t, ms.held(t, name), "the final Unlock frees every node")
	time.Sleep(2 * lease) // the thing tested: nothing takes a node back after the final Unlock
	assert.Zero(t, ms.held(t, name), "no node is taken again after the final Unlock")
	assert.False(t, retaking(), "nothing retakes after the final Unlock")
}
