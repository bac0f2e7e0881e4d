package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestMultiLockStaleUnlockLeavesLaterHold: an Unlock with the lock
// context of an owner's MultiLock hold that its final Unlock ended already
// (a second Unlock of it, as a deferred Unlock after an explicit one
// makes) gets ErrNotHeld and leaves alone the owner's later hold, taken
// since with the owner's context (as Mutex does: TestHostileUnlockOfEndedHold).
// While the later hold's context is live, no other Client takes the lock.
func TestMultiLockStaleUnlockLeavesLaterHold(t *testing.T) {
	const lease = 600 * time.Millisecond
	name := redistest.LockName(t)
	c := sharedClient(t, rlock.WithLeaseTime(lease))
	ml := rlock.NewMultiLock(c.Mutex(name+".a"), c.Mutex(name+".b"))
	owner := sharedOwner(t, c, name)

	ctx1, err := ml.Lock(owner)
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(ctx1))
	ctx2, err := ml.Lock(owner) // the owner's next hold
	require.NoError(t, err)

	assert.ErrorIs(t, ml.Unlock(ctx1), rlock.ErrNotHeld, "a second Unlock of the ended hold")

	other := sharedClient(t, rlock.WithLeaseTime(lease))
	rival := rlock.NewMultiLock(other.Mutex(name+".a"), other.Mutex(name+".b"))
	rctx, ok, err := rival.TryLock(t.Context(), 3*lease, 0)
	require.NoError(t, err)
	if ok {
		live := ctx2.Err() == nil
		assert.NoError(t, rival.Unlock(rctx))
		assert.False(t, live, "another Client took the MultiLock while the owner's later hold's context was live (cause %v)", context.Cause(ctx2))
	}
	if ctx2.Err() == nil {
		assert.NoError(t, ml.Unlock(ctx2))
	}
}
