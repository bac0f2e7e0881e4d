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

// TestReentryContextEndsWithHold: the context a Lock returns is
// done when the lock is no longer held. A nested Lock through a context
// that carries the hold but not its cancellation (context.WithoutCancel of
// the lock context, as code that detaches work from its caller's
// cancellation makes) re-enters; the context it returns must end when the
// hold is lost. Mutex does so (its re-entry binds such a context to the
// hold); the MultiLock returned the detached context itself.
func TestReentryContextEndsWithHold(t *testing.T) {
	name := redistest.LockName(t)
	c := sharedClient(t)
	check := func(t *testing.T, lock func(context.Context) (context.Context, error), force func()) {
		lctx, err := lock(t.Context())
		require.NoError(t, err)
		rctx, err := lock(context.WithoutCancel(lctx)) // a re-entry
		require.NoError(t, err)
		force()
		receive(t, lctx.Done(), "the outer lock context ends with the loss")
		select {
		case <-rctx.Done():
		case <-time.After(2 * time.Second):
			t.Fatalf("the nested Lock's context is live 2s after the hold was lost (outer cause: %v)", context.Cause(lctx))
		}
		assert.ErrorIs(t, context.Cause(rctx), rlock.ErrLockLost)
	}
	t.Run("Mutex", func(t *testing.T) {
		m := c.Mutex(name + ".m")
		check(t, m.Lock, func() { _, err := m.ForceUnlock(t.Context()); require.NoError(t, err) })
	})
	t.Run("MultiLock", func(t *testing.T) {
		a, b := c.Mutex(name+".a"), c.Mutex(name+".b")
		ml := rlock.NewMultiLock(a, b)
		check(t, ml.Lock, func() { _, err := b.ForceUnlock(t.Context()); require.NoError(t, err) })
	})
}
