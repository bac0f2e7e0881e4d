package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// deadLease2 is the lease of the Clients whose waiters die here: long
// enough for the test to queue everyone while their entries live.
const deadLease2 = 4 * time.Second

// TestFairTwoDeadWaitersThenLive: a holder with a long fixed lease, then
// two waiters whose processes died (their entries still live), then a
// live waiter X. The holder unlocks early: the first dead waiter is handed
// the lock, for what is left of its entry's lease, and the second dead
// waiter, next in line, is told that lease, but is dead. Dead waiters
// must not block the queue for longer than their lease: X must take the
// lock within a few seconds of the dead waiters' leases.
//
// On the current code only the waiter right after a new holder is told
// when the holder's lease ends (queue.lua giveTo's '@<after> next <ms>'),
// and nothing else asks for the lock when it expires: X sleeps on until
// the first holder's long lease would have run out (its last refusal's
// pttl), while the lock is free.
func TestFairTwoDeadWaitersThenLive(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	fm := newRlock(t, s.Client(t)).FairMutex(name)
	held, err := fm.LockFor(t.Context(), time.Minute)
	require.NoError(t, err)
	queueDeadWaiter(t, s, name, 0, deadLease2)
	queueDeadWaiter(t, s, name, 1, deadLease2)
	live := newRlock(t, s.Client(t)).FairMutex(name)
	ctxX, cancelX := context.WithCancel(t.Context())
	defer cancelX()
	got := lockWith(live, ctxX)
	waitQueued(t, admin, name, 3)

	require.NoError(t, fm.Unlock(held))
	start := time.Now()
	// Both dead entries end within deadLease2 of the unlock at the latest
	// (the lock handed to the first ends with its entry's lease); a
	// couple of seconds more are for a loaded machine.
	limit := deadLease2 + 3*time.Second
	select {
	case r := <-got:
		require.NoError(t, r.err)
		t.Logf("the live waiter took the lock %v after the unlock", time.Since(start))
		require.NoError(t, live.Unlock(r.ctx))
	case <-time.After(limit):
		pttl, err := admin.Do(t.Context(), admin.B().Pttl().Key(fairKeys(name).Hash).Build()).AsInt64()
		require.NoError(t, err)
		assert.Fail(t, "the live waiter still sleeps behind dead waiters",
			"%v after the unlock (dead waiters' lease %v); lock pttl %d (-2: free); live queue %v",
			time.Since(start), deadLease2, pttl, queued(t, admin, name))
		cancelX()
		if r := <-got; r.err == nil {
			require.NoError(t, live.Unlock(r.ctx))
		}
	}
}
