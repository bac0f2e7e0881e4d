package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestSemaphoreSettleAfterEndedHoldTakesNoPermits: an owner held 2
// permits under a fixed lease that ran out (its hold ended; the turn keeps
// the confirmed count 2). Its next Acquire asks Redis for a new hold of 1,
// and the reply is held back (CLIENT PAUSE WRITE) past the caller's
// deadline, so the request is settled. The lost acquire applies (the owner
// holds 1), and then the settling release must take it back: to 0, not to
// the ended hold's count, which would have the owner hold 2 permits that
// nobody asked for, more than exist beside another holder's 1. (A release
// never raises a count, either: lua's TestSemaphoreReleaseNeverTakesPermits.)
func TestSemaphoreSettleAfterEndedHoldTakesNoPermits(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	admin := node.Client(t)
	c := newDrainable(t, redistest.Setup{Node: node})
	other := newRlock(t, node.Client(t))
	name := redistest.LockName(t)
	sem := c.Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)

	owner := sharedOwner(t, c.Client, name)
	p1, err := sem.AcquireFor(owner, 200*time.Millisecond)
	require.NoError(t, err)
	_, err = sem.AcquireFor(owner, 200*time.Millisecond)
	require.NoError(t, err)
	n, err := sem.HoldCount(owner)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	<-p1.Done() // the fixed lease ran out: the hold ended
	redistest.Eventually(t, "the ended hold's permits are free", func(context.Context) error {
		return redistest.Exactly("available", available(t, sem), 2)
	})

	g, err := other.Semaphore(name).Acquire(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, available(t, sem))

	require.NoError(t, admin.Do(t.Context(), admin.B().ClientPause().Timeout(300).Write().Build()).Error())
	ctx, cancel := context.WithTimeout(owner, 50*time.Millisecond)
	_, err = sem.AcquireFor(ctx, 10*time.Second)
	cancel()
	require.Error(t, err, "the acquire was held back past its deadline")
	t.Logf("acquire: %v", err)
	// Once Redis ran the paused calls, the settling release included, the
	// Acquire that returned an error holds no permit.
	redistest.Eventually(t, "the failed Acquire holds no permit", func(context.Context) error {
		return redistest.Exactly("available", available(t, sem), 1)
	})
	st, err := sem.Inspect(t.Context())
	require.NoError(t, err)
	for _, h := range st.Holders {
		assert.False(t, h.Local, "no holder of this Client is left: %+v", st)
	}
	require.NoError(t, other.Semaphore(name).Release(g))
}
