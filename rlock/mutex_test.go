package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestMutex runs the Mutex suite on every Redis backend the harness offers.
func TestMutex(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"LockUnlock":                 testLockUnlock,
		"Reentrant":                  testReentrant,
		"OtherOwnerWaits":            testOtherOwnerWaits,
		"TryLockNoWait":              testTryLockNoWait,
		"TryLockWaitsForUnlock":      testTryLockWaitsForUnlock,
		"LockForExpires":             testLockForExpires,
		"UnlockByNonOwner":           testUnlockByNonOwner,
		"UnlockAfterLeaseTakenOver":  testUnlockAfterLeaseTakenOver,
		"FencingTokens":              testFencingTokens,
		"CancelWhileWaiting":         testCancelWhileWaiting,
		"UnlockWithCancelledContext": testUnlockWithCancelledContext,
		"CloseWakesWaiters":          testCloseWakesWaiters,
		"ForceUnlock":                testForceUnlock,
	}
	redistest.ForEachSetup(t, func(t *testing.T, s redistest.Setup) {
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tc(t, s)
			})
		}
	})
}

func testLockUnlock(t *testing.T, s redistest.Setup) {
	mu := newRlock(t, s.Client(t)).Mutex(redistest.LockName(t))
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	locked, err := mu.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "IsLocked after Lock")
	lease, err := mu.RemainingLease(ctx)
	require.NoError(t, err)
	assert.Greater(t, lease, rlock.DefaultLeaseTime/2, "the watchdog lease is set")

	require.NoError(t, mu.Unlock(ctx))
	locked, err = mu.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "IsLocked after Unlock")
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the lock context ends with the final Unlock")
	assert.NotErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "an Unlock is not a loss")
}

func testReentrant(t *testing.T, s redistest.Setup) {
	mu := newRlock(t, s.Client(t)).Mutex(redistest.LockName(t))
	outer, err := mu.Lock(t.Context())
	require.NoError(t, err)
	ctxs := []context.Context{outer}
	for level := 2; level <= 3; level++ {
		inner, err := mu.Lock(ctxs[len(ctxs)-1])
		require.NoError(t, err, "re-entering at level %d", level)
		ctxs = append(ctxs, inner)
		n, err := mu.HoldCount(inner)
		require.NoError(t, err)
		assert.Equal(t, level, n, "HoldCount after %d Locks", level)
	}
	for level := 3; level >= 1; level-- {
		require.NoError(t, mu.Unlock(ctxs[level-1]))
		n, err := mu.HoldCount(outer)
		require.NoError(t, err)
		assert.Equal(t, level-1, n, "HoldCount after Unlock at level %d", level)
		if level > 1 {
			assert.NoError(t, outer.Err(), "the lock context lives while levels remain")
		}
	}
	assert.Error(t, outer.Err(), "the lock context ends with the last Unlock")
	assert.ErrorIs(t, mu.Unlock(outer), rlock.ErrNotHeld, "one Unlock too many")
}

func testOtherOwnerWaits(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	holder, err := c.Mutex(name).Lock(t.Context())
	require.NoError(t, err)

	// The same Client and the parent context: a second owner.
	got := make(chan error, 1)
	go func() {
		ctx, err := c.Mutex(name).Lock(t.Context())
		if err == nil {
			err = c.Mutex(name).Unlock(ctx)
		}
		got <- err
	}()
	waitWaiting(t, s.Client(t), lockKeys(name), 1)
	select {
	case err := <-got:
		t.Fatalf("a second owner took a held lock (err %v)", err)
	default:
	}
	unlockedAt := time.Now()
	require.NoError(t, c.Mutex(name).Unlock(holder))
	require.NoError(t, receive(t, got, "the waiting owner's Lock after Unlock"))
	// A waiter the Unlock did not wake would sleep out the 30 s lease.
	assert.Less(t, time.Since(unlockedAt), 5*time.Second, "the waiter was served long before the 30 s lease")
}

func testTryLockNoWait(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	_, err := newRlock(t, s.Client(t)).Mutex(name).Lock(t.Context())
	require.NoError(t, err)

	rec := &hooktest.Recorder{}
	mu := newRlock(t, s.Client(t), rlock.WithHooks(rec)).Mutex(name)
	parent := t.Context()
	ctx, ok, err := mu.TryLock(parent, 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "TryLock(wait=0) on a held lock")
	assert.Equal(t, parent, ctx, "a failed TryLock returns ctx unchanged")
	ends := rec.Snapshot().Acquires
	require.Len(t, ends, 1)
	assert.Equal(t, 1, ends[0].Attempts, "TryLock(wait=0) tries once")
	assert.False(t, ends[0].Waited, "and does not wait")
}

func testTryLockWaitsForUnlock(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	holderClient := newRlock(t, s.Client(t))
	holder := holderClient.Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)

	mu := newRlock(t, s.Client(t)).Mutex(name)
	type result struct {
		ctx context.Context
		ok  bool
		err error
	}
	res := make(chan result, 1)
	go func() {
		ctx, ok, err := mu.TryLock(t.Context(), redistest.Patience, 0)
		res <- result{ctx, ok, err}
	}()
	waitWaiting(t, s.Client(t), lockKeys(name), 1)
	require.NoError(t, holder.Unlock(hctx))
	r := receive(t, res, "TryLock")
	require.NoError(t, r.err)
	require.True(t, r.ok, "TryLock gets the lock the holder frees within the wait")
	ctx := r.ctx
	n, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, mu.Unlock(ctx))
}

func testLockForExpires(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	mu := newRlock(t, s.Client(t)).Mutex(name)
	ctx, err := mu.LockFor(t.Context(), 200*time.Millisecond)
	require.NoError(t, err)

	receive(t, ctx.Done(), "the end of a lock context with a 200 ms lease")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	redistest.Eventually(t, "the key expires with its lease", func(ctx context.Context) error {
		locked, err := mu.IsLocked(ctx)
		if err == nil && locked {
			return errors.New("still locked")
		}
		return err
	})

	other, ok, err := newRlock(t, s.Client(t)).Mutex(name).TryLock(t.Context(), 0, time.Second)
	require.NoError(t, err)
	assert.True(t, ok, "another owner takes the expired lock")
	_, valid := newRlock(t, s.Client(t)).Mutex(name).FencingToken(other)
	assert.False(t, valid, "a context of another Client carries no hold of this one")
}

func testUnlockByNonOwner(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	holder := newRlock(t, s.Client(t)).Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)

	// An owner of another lock, and a context with no owner at all.
	other := newRlock(t, s.Client(t))
	octx, err := other.Mutex(name + ":other").Lock(t.Context())
	require.NoError(t, err)
	assert.ErrorIs(t, other.Mutex(name).Unlock(octx), rlock.ErrNotHeld)
	assert.ErrorIs(t, other.Mutex(name).Unlock(t.Context()), rlock.ErrNotHeld)

	n, err := holder.HoldCount(hctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the holder's lock is intact")
	assert.NoError(t, hctx.Err(), "the holder's context is intact")
}

func testUnlockAfterLeaseTakenOver(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	first := newRlock(t, s.Client(t)).Mutex(name)
	fctx, err := first.LockFor(t.Context(), 100*time.Millisecond)
	require.NoError(t, err)

	second := newRlock(t, s.Client(t)).Mutex(name)
	sctx, ok, err := second.TryLock(t.Context(), redistest.Patience, 0)
	require.NoError(t, err)
	require.True(t, ok, "the second owner takes the lock once the lease runs out")

	assert.ErrorIs(t, first.Unlock(fctx), rlock.ErrNotHeld)
	n, err := second.HoldCount(sctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the new owner's lock is intact")
}

func testFencingTokens(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	var last int64
	for round := range 3 {
		mu := newRlock(t, s.Client(t)).Mutex(name)
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err)
		token, ok := mu.FencingToken(ctx)
		require.True(t, ok)
		assert.Greater(t, token, last, "round %d: tokens strictly increase", round)
		last = token

		inner, err := mu.Lock(ctx)
		require.NoError(t, err)
		again, ok := mu.FencingToken(inner)
		require.True(t, ok)
		assert.Equal(t, token, again, "re-entry keeps the token")
		require.NoError(t, mu.Unlock(inner))
		require.NoError(t, mu.Unlock(ctx))
		_, ok = mu.FencingToken(ctx)
		assert.False(t, ok, "no token once released")
	}
}

func testCancelWhileWaiting(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	holderClient := newRlock(t, s.Client(t))
	holder := holderClient.Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)
	raw := s.Client(t)
	before := redistest.LastingKeys(t, raw, lockKeys(name))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiter := newRlock(t, s.Client(t)).Mutex(name)
	got := make(chan error, 1)
	go func() {
		_, err := waiter.Lock(ctx)
		got <- err
	}()
	waitWaiting(t, s.Client(t), lockKeys(name), 1)
	cancel()
	err = receive(t, got, "the cancelled Lock")
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, before, redistest.LastingKeys(t, raw, lockKeys(name)), "the cancelled waiter left no key")

	require.NoError(t, holder.Unlock(hctx))
	redistest.AssertNoSubscribers(t, raw, lockKeys(name))
}

func testUnlockWithCancelledContext(t *testing.T, s redistest.Setup) {
	mu := newRlock(t, s.Client(t)).Mutex(redistest.LockName(t))
	parent, cancel := context.WithCancel(t.Context())
	ctx, err := mu.Lock(parent)
	require.NoError(t, err)
	cancel()
	require.Error(t, ctx.Err(), "a lock context follows its parent")
	require.NoError(t, mu.Unlock(ctx), "Unlock works with a cancelled context")
	locked, err := mu.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked)
}

func testCloseWakesWaiters(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	_, err := newRlock(t, s.Client(t)).Mutex(name).Lock(t.Context())
	require.NoError(t, err)

	c := newRlock(t, s.Client(t))
	got := make(chan error, 1)
	go func() {
		_, err := c.Mutex(name).Lock(t.Context())
		got <- err
	}()
	waitWaiting(t, s.Client(t), lockKeys(name), 1)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, receive(t, got, "the waiting Lock after Close"), rlock.ErrClosed)
	_, err = c.Mutex(name).Lock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed, "Lock after Close")
}

func testForceUnlock(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	mu := newRlock(t, s.Client(t)).Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	deleted, err := newRlock(t, s.Client(t)).Mutex(name).ForceUnlock(t.Context())
	require.NoError(t, err)
	assert.True(t, deleted)
	deleted, err = mu.ForceUnlock(t.Context())
	require.NoError(t, err)
	assert.False(t, deleted, "nothing left to delete")
	receive(t, ctx.Done(), "the end of a force-unlocked hold of this Client")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	assert.True(t, errors.Is(mu.Unlock(ctx), rlock.ErrNotHeld))
}
