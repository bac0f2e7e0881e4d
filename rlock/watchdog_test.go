package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// watchdogLease is short so that renewals happen often in a test.
const watchdogLease = time.Second

func TestWatchdogKeepsLockUntilUnlock(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	mu := newRlock(t, node.Client(t), rlock.WithLeaseTime(watchdogLease)).Mutex(redistest.LockName(t))
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	time.Sleep(5 * watchdogLease) // the thing under test: five leases pass, and only renewals keep the lock
	require.NoError(t, ctx.Err(), "the lock context lives while the watchdog renews")
	n, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "still held and owned after five leases")
	lease, err := mu.RemainingLease(ctx)
	require.NoError(t, err)
	assert.Greater(t, lease, watchdogLease/3, "the lease is being renewed")

	require.NoError(t, mu.Unlock(ctx))
	raw := node.Client(t)
	before := redistest.ScriptCalls(t, raw)
	time.Sleep(2 * watchdogLease) // the thing under test: six renew intervals pass without a renewal
	assert.Equal(t, before, redistest.ScriptCalls(t, raw), "no renewal reaches Redis after Unlock")
}

// TestWatchdogDetectsLoss takes the lock away behind the holder's back in
// each way Redis can lose it, and expects the holder to learn within one
// renew interval.
func TestWatchdogDetectsLoss(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	// Each loss gets a client of its own: a restart breaks the connections
	// of the clients that saw it.
	losses := map[string]func(t *testing.T, key string){
		"Deleted": func(t *testing.T, key string) {
			raw := node.Client(t)
			require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(key).Build()).Error())
		},
		"FlushAll": func(t *testing.T, _ string) {
			raw := node.Client(t)
			require.NoError(t, raw.Do(t.Context(), raw.B().Flushall().Build()).Error())
		},
		"RestartedEmpty": func(t *testing.T, _ string) {
			if !node.Controllable() {
				t.Skip("the Redis at REDIS_ADDR cannot be killed and restarted by the test")
			}
			require.NoError(t, node.Kill(t.Context()))
			require.NoError(t, node.Restart(t.Context()))
		},
	}
	for name, lose := range losses {
		t.Run(name, func(t *testing.T) {
			mu := newRlock(t, node.Client(t), rlock.WithLeaseTime(watchdogLease)).Mutex(redistest.LockName(t))
			ctx, err := mu.Lock(t.Context())
			require.NoError(t, err)

			lose(t, lockKeys(redistest.LockName(t)).Hash)
			receive(t, ctx.Done(), "the holder told of its loss")
			assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
			assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNotHeld)

			again, err := mu.Lock(t.Context())
			require.NoError(t, err, "a fresh Lock works after a loss")
			require.NoError(t, mu.Unlock(again))
		})
	}
}

// TestWatchdogRedisPaused stops Redis for longer than the lease: the holder's
// context must be done by its local deadline, which falls before the lease
// can have run out in Redis, and another client takes the lock after Redis
// resumes.
func TestWatchdogRedisPaused(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	if !node.Controllable() {
		t.Skip("the Redis at REDIS_ADDR cannot be paused by the test")
	}
	name := redistest.LockName(t)
	rec := &hooktest.Recorder{}
	mu := newRlock(t, node.Client(t), rlock.WithLeaseTime(watchdogLease), rlock.WithHooks(rec)).Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	// The pause comes after a renewal, which moved the local deadline on.
	rec.WaitFor(t, "a round renews the hold", func(s hooktest.Events) bool {
		return len(s.Rounds) > 0 && s.Rounds[len(s.Rounds)-1].Renewed > 0
	})

	paused := time.Now()
	require.NoError(t, node.Pause(t.Context()))
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = node.Resume(context.Background())
		}
	})
	receive(t, ctx.Done(), "the end of the hold while Redis is paused")
	deadline, ok := rlock.LocalDeadline(ctx) // fixed once the hold ended
	require.True(t, ok)
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	// The bound is the property under test: the holder stops believing
	// before the lease that Redis counts from the last renewal runs out.
	// It is the deadline the hold ended at, not when this goroutine woke,
	// which the scheduler delays under load.
	assert.Less(t, deadline-alarm.At(paused), watchdogLease, "the hold's deadline came before the lease, counted from the pause, ran out")
	assert.GreaterOrEqual(t, alarm.Now(), deadline, "the hold ended at its deadline, not before")

	time.Sleep(watchdogLease) // the fault: Redis stays paused past the lease
	require.NoError(t, node.Resume(t.Context()))
	resumed = true
	other := newRlock(t, node.Client(t), rlock.WithLeaseTime(watchdogLease)).Mutex(name)
	octx, ok, err := other.TryLock(t.Context(), redistest.Patience, 0)
	require.NoError(t, err)
	require.True(t, ok, "another client takes the lock after Redis resumes")
	require.NoError(t, other.Unlock(octx))
}
