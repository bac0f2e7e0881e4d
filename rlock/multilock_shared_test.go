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

// ownerHold is a hold an owner can have over a node of a MultiLock
// besides the MultiLock's own: setup has the owner hold it, and returns
// its lock context, the owner's context to call ml with, ml, and the
// hold's release.
type ownerHold struct {
	name  string
	setup func(t *testing.T, c *rlock.Client, name string) (held, with context.Context, ml *rlock.MultiLock, release func() error)
}

// ownerHolds are the owner's own Mutex, another MultiLock over the node,
// and the same MultiLock taken by another goroutine of the owner.
var ownerHolds = []ownerHold{
	{"own Mutex", func(t *testing.T, c *rlock.Client, name string) (context.Context, context.Context, *rlock.MultiLock, func() error) {
		a := c.Mutex(name + ".a")
		ctxA, err := a.Lock(t.Context())
		require.NoError(t, err)
		return ctxA, ctxA, rlock.NewMultiLock(a, c.Mutex(name+".b")), func() error { return a.Unlock(ctxA) }
	}},
	{"overlapping MultiLock", func(t *testing.T, c *rlock.Client, name string) (context.Context, context.Context, *rlock.MultiLock, func() error) {
		ab := rlock.NewMultiLock(c.Mutex(name+".a"), c.Mutex(name+".b"))
		abctx, err := ab.Lock(t.Context())
		require.NoError(t, err)
		return abctx, abctx, rlock.NewMultiLock(c.Mutex(name+".a"), c.Mutex(name+".c")), func() error { return ab.Unlock(abctx) }
	}},
	{"shared owner", func(t *testing.T, c *rlock.Client, name string) (context.Context, context.Context, *rlock.MultiLock, func() error) {
		ml := rlock.NewMultiLock(c.Mutex(name+".a"), c.Mutex(name+".b"))
		owner := sharedOwner(t, c, name)
		first, err := ml.Lock(owner)
		require.NoError(t, err)
		// Another goroutine of the owner locks with the owner's
		// context, which carries no hold of ml.
		return first, owner, ml, func() error { return ml.Unlock(first) }
	}},
}

// TestMultiLockLeavesPartsTheOwnerHolds: a MultiLock's part is its
// owner's hold on the node, which the MultiLock's Unlock and a lost quorum
// end. So a fresh MultiLock hold by an owner that holds a node already
// (its own Mutex, another MultiLock over it, or the same MultiLock taken
// by another goroutine of the owner) is refused with ErrInvalidArgument,
// and gives back what it took; and an Unlock with a context that carries
// no hold of the MultiLock (the other hold's, the owner's) fails with
// ErrNotHeld and releases nothing. The owner's other hold is left as it
// was, and still excludes every other owner. (Such a Lock used to
// succeed, and the MultiLock's end ended the other hold, or left its
// context live with nothing renewed; such an Unlock released a level on
// every node: it freed the owner's own Mutex and ended its context, or
// freed a node under another MultiLock whose context lived.)
func TestMultiLockLeavesPartsTheOwnerHolds(t *testing.T) {
	const lease = 600 * time.Millisecond
	for _, tc := range ownerHolds {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.LockName(t)
			c := sharedClient(t, rlock.WithLeaseTime(lease))
			held, with, ml, release := tc.setup(t, c, name)
			_, err := ml.Lock(with)
			require.ErrorIs(t, err, rlock.ErrInvalidArgument, "a fresh MultiLock hold over a node its owner holds")
			require.ErrorIs(t, ml.Unlock(with), rlock.ErrNotHeld, "an Unlock with a context that carries no hold of the MultiLock")

			time.Sleep(3 * lease) // renewals would have stopped, and the lease run out
			assert.NoError(t, held.Err(), "the owner's other hold lives on: cause %v", context.Cause(held))
			rival := sharedClient(t, rlock.WithLeaseTime(lease)).Mutex(name + ".a")
			_, ok, err := rival.TryLock(t.Context(), 0, 0)
			require.NoError(t, err)
			assert.False(t, ok, "another Client took a while the owner's other hold was live")
			require.NoError(t, release())
			for _, n := range []string{".a", ".b", ".c"} {
				locked, err := c.Mutex(name + n).IsLocked(t.Context())
				require.NoError(t, err)
				assert.False(t, locked, "%s left held", n)
			}
		})
	}
}
