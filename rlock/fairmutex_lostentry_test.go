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

// TestFairWaiterEntryLapsedThenFreed: Redis pauses for longer than a
// waiter's own lease (1 s; the holder's Client has the default 30 s), so
// the waiter's queue entry lapses, and its next renewal, after Redis
// resumes, finds it gone. The waiter lives on and still waits. The holder
// then unlocks: the lock is free and nobody else wants it, so the waiter
// must take it within a second or two.
//
// The watchdog's loss of the entry (place.Lost) used to only forget the
// renewal: the waiter was not woken to queue again, the release found
// nobody live in the queue and told nobody, and the waiter slept until the
// holder's lease at its last refusal would have run out (~30 s) while the
// lock was free.
func TestFairWaiterEntryLapsedThenFreed(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	if !node.Controllable() {
		t.Skip("REDIS_ADDR is set: the test pauses the Redis it runs")
	}
	name := redistest.LockName(t)
	admin := node.Client(t)
	holder := newRlock(t, node.Client(t)).FairMutex(name)
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)

	const lease = time.Second
	fm := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)).FairMutex(name)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := lockWith(fm, ctx)
	waitQueued(t, admin, name, 1)
	waitParked(t, fm, 1)

	require.NoError(t, node.Pause(t.Context()))
	time.Sleep(lease + 600*time.Millisecond) // the waiter's entry lapses
	require.NoError(t, node.Resume(t.Context()))
	// A renewal round after the resume finds the entry gone (rounds run
	// every lease/3); the waiter must not be left out of the queue.
	time.Sleep(2 * lease)
	select {
	case r := <-got:
		t.Fatalf("the waiter's Lock returned before the unlock: %v", r.err)
	default:
	}

	require.NoError(t, holder.Unlock(held))
	start := time.Now()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		t.Logf("the waiter took the lock %v after the unlock", time.Since(start))
		require.NoError(t, fm.Unlock(r.ctx))
	case <-time.After(4 * time.Second):
		locked, err := holder.IsLocked(t.Context())
		require.NoError(t, err)
		assert.Fail(t, "the live waiter still sleeps while the lock is free",
			"%v after the unlock; locked %v; queue %v", time.Since(start), locked, queued(t, admin, name))
		cancel()
		if r := <-got; r.err == nil {
			require.NoError(t, fm.Unlock(r.ctx))
		}
	}
}
