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

// TestMultiLockUnlockThroughAnotherHandle: a MultiLock handle made
// again over the same mutexes (as a Mutex handle may be made again by
// name) Unlocks the hold that the first handle's Lock returned. Its
// Unlock returns nil: it released every node. Then the lock context must
// not stay live while another Client can take the lock: it is done, as
// after a final Unlock, or the lock is still held.
func TestMultiLockUnlockThroughAnotherHandle(t *testing.T) {
	const lease = 600 * time.Millisecond
	name := redistest.LockName(t)
	c := sharedClient(t, rlock.WithLeaseTime(lease))
	a, b := c.Mutex(name+".a"), c.Mutex(name+".b")
	lctx, err := rlock.NewMultiLock(a, b).Lock(t.Context())
	require.NoError(t, err)

	err = rlock.NewMultiLock(a, b).Unlock(lctx)
	if err != nil {
		t.Skipf("the other handle refused the Unlock (%v): nothing was released", err)
	}

	other := sharedClient(t, rlock.WithLeaseTime(lease))
	rival := rlock.NewMultiLock(other.Mutex(name+".a"), other.Mutex(name+".b"))
	rctx, ok, err := rival.TryLock(t.Context(), 2*lease, 0)
	require.NoError(t, err)
	if ok {
		live := lctx.Err() == nil
		assert.NoError(t, rival.Unlock(rctx))
		assert.False(t, live, "another Client took the MultiLock while the released hold's context was live (cause %v)", context.Cause(lctx))
	}
}
