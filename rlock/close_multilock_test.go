package rlock_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestCloseEndsMultiLockContext: Close "ends every hold's context"
// before it returns: a MultiLock's lock context too, whose parts were all
// held through the closed Client. A caller that sees Close return must
// find that context done, as it finds a Mutex's (TestLifecycleConcurrentClose).
func TestCloseEndsMultiLockContext(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	name := redistest.LockName(t)
	early := 0
	for i := range 50 {
		c, err := rlock.New(rc)
		require.NoError(t, err)
		ml := rlock.NewMultiLock(c.Mutex(fmt.Sprint(name, i, "a")), c.Mutex(fmt.Sprint(name, i, "b")))
		lctx, err := ml.LockFor(t.Context(), 5e9)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		if lctx.Err() == nil {
			early++
		}
	}
	assert.Zero(t, early, "MultiLock contexts still live when Close returned, of 50")
}
