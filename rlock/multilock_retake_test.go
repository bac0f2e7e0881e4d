package rlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// partFields returns the fields of lock name's hash on the node of rc.
func partFields(t *testing.T, rc rueidis.Client, name string) map[string]string {
	t.Helper()
	m, err := rc.Do(t.Context(), rc.B().Hgetall().Key(lockKeys(name).Hash).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// retakeLease is the lease of the retake tests' RedLocks: renewals, and
// retakes of a lost part, every 200 ms.
const retakeLease = 600 * time.Millisecond

// heldRedLock returns three masters and a RedLock over them, named name,
// held by ctx at depth levels (Lock, then nested Locks).
func heldRedLock(t *testing.T, depth int) (ms masters, name string, rl *rlock.MultiLock, ctxs []context.Context) {
	t.Helper()
	ms = startMasters(t, 3)
	name = redistest.LockName(t)
	rl = rlock.NewRedLock(ms.mutexes(t, name, rlock.WithLeaseTime(retakeLease))...)
	ctx := t.Context()
	for range depth {
		lctx, err := rl.Lock(ctx)
		require.NoError(t, err)
		ctxs, ctx = append(ctxs, lctx), lctx
	}
	return ms, name, rl, ctxs
}

// stealPart has a rival take node 0's part of the RedLock name: the next
// renewal finds it gone, and the retakes are refused while the rival holds
// it.
func stealPart(t *testing.T, ms masters, name string) {
	t.Helper()
	steal := `redis.call('del', KEYS[1]); redis.call('hset', KEYS[1], 'rival', 1); redis.call('pexpire', KEYS[1], 60000); return 1`
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Eval().Script(steal).Numkeys(1).Key(lockKeys(name).Hash).Build()).Error())
	require.Eventually(t, retaking, 4*retakeLease, 10*time.Millisecond, "the RedLock retakes its lost part")
}

// TestRedLockRetakenPartIsReleased: a RedLock part lost to another owner
// is taken again once the node is free. The retaken part is one level,
// recorded as the RedLock's part (retaking stops), and the final Unlock
// releases it: no node keeps a part after the final Unlock. (A retake that
// did not carry the hold's owner took the node again every period, a level
// deeper each time, and the part outlived the Unlock.)
func TestRedLockRetakenPartIsReleased(t *testing.T) {
	const lease = retakeLease
	ms, name, rl, ctxs := heldRedLock(t, 1)
	ctx, k := ctxs[0], lockKeys(name)
	stealPart(t, ms, name)
	require.NoError(t, ctx.Err(), "two of three parts are still a quorum")

	// The rival lets go: the next retake takes node 0 again.
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Del().Key(k.Hash).Build()).Error())
	require.Eventually(t, func() bool { return ms.held(t, name) == 3 }, 4*lease, 10*time.Millisecond, "node 0 is taken again")

	// Several retake periods later, the part is still one level.
	time.Sleep(4 * lease / 3)
	for field, v := range partFields(t, ms.raw[0], name) {
		if field != "waiters" && !strings.Contains(field, "#") {
			assert.Equal(t, "1", v, "the retaken part on node 0 is one level (field %s)", field)
		}
	}
	assert.False(t, retaking(), "once retaken, the part is no longer being retaken")

	require.NoError(t, rl.Unlock(ctx))
	assert.Error(t, ctx.Err(), "the final Unlock ends the context")
	// Give any retake in flight or watchdog renewal time to show.
	time.Sleep(lease)
	assert.Zero(t, ms.held(t, name), "no node keeps a part after the final Unlock")
}

// TestRedLockNestedUnlockRetakes: a RedLock that lost a part retakes it
// on renewal while it holds the quorum. A nested Unlock (the owner still
// holds the RedLock, one level down) stops the retaking while it runs, and
// the hold that lives on takes it up again: the part is taken back once
// the node is free, as deep as the hold, so that the final Unlock frees
// every node.
func TestRedLockNestedUnlockRetakes(t *testing.T) {
	const lease = retakeLease
	ms, name, rl, ctxs := heldRedLock(t, 2)
	ctx, inner, k := ctxs[0], ctxs[1], lockKeys(name)
	stealPart(t, ms, name)

	require.NoError(t, rl.Unlock(inner), "the nested Unlock")
	require.NoError(t, ctx.Err(), "the outer level still holds the RedLock")

	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Del().Key(k.Hash).Build()).Error())
	assert.Eventually(t, func() bool { return ms.held(t, name) == 3 }, 4*lease, 10*time.Millisecond,
		"the lost part is taken again once node 0 is free, the hold living on")
	require.NoError(t, ctx.Err())
	require.NoError(t, rl.Unlock(ctx))
	assert.Zero(t, ms.held(t, name), "the final Unlock frees every node")
}

// TestMultiLockUnlockAfterQuorumLost: the quorum of a fixed-lease lock is
// lost in Redis (parts deleted, as by a restart without persistence or a
// failover) before the holder learns of it. Unlock finds the parts gone:
// as a Mutex's, it says ErrNotHeld, and the context ends as lost, rather
// than report a clean release of a lock that was not held.
func TestMultiLockUnlockAfterQuorumLost(t *testing.T) {
	for _, tc := range []struct {
		what        string
		nodes, lost int
		redlock     bool
	}{
		{"MultiLock", 2, 1, false},
		{"RedLock", 3, 2, true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ms := startMasters(t, tc.nodes)
			name := redistest.LockName(t)
			mutexes := ms.mutexes(t, name)
			ml := rlock.NewMultiLock(mutexes...)
			if tc.redlock {
				ml = rlock.NewRedLock(mutexes...)
			}
			ctx, err := ml.LockFor(t.Context(), 30*time.Second)
			require.NoError(t, err)
			for _, rc := range ms.raw[:tc.lost] {
				require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(lockKeys(name).Hash).Build()).Error())
			}
			err = ml.Unlock(ctx)
			assert.ErrorIs(t, err, rlock.ErrNotHeld, "fewer than the quorum were held at Unlock: the lock was lost")
			assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "the context ends as lost")
			assert.Zero(t, ms.held(t, name), "the parts left are released")
		})
	}
}

// TestRedLockRetakesAsDeepAsTheHold: a RedLock held at two levels loses a
// part, and takes it again at two levels, as the other nodes hold it: the
// nested Unlock then leaves one level on every node, all three still held,
// and the final Unlock frees them all.
func TestRedLockRetakesAsDeepAsTheHold(t *testing.T) {
	const lease = retakeLease
	ms, name, rl, ctxs := heldRedLock(t, 2)
	ctx, inner, k := ctxs[0], ctxs[1], lockKeys(name)
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Del().Key(k.Hash).Build()).Error())
	levels := func() string {
		for field, v := range partFields(t, ms.raw[0], name) {
			if field != "waiters" && !strings.Contains(field, "#") {
				return v
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return levels() == "2" }, 4*lease, 10*time.Millisecond, "node 0 is taken again, at two levels: %v", partFields(t, ms.raw[0], name))

	require.NoError(t, rl.Unlock(inner), "the nested Unlock")
	require.NoError(t, ctx.Err(), "the outer level still holds the RedLock")
	assert.Equal(t, 3, ms.held(t, name), "every node still holds its part")
	assert.Equal(t, "1", levels(), "node 0's part is one level down, as the others")
	require.NoError(t, rl.Unlock(ctx))
	assert.Zero(t, ms.held(t, name), "the final Unlock frees every node")
}
