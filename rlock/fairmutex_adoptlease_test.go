package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestFairSharedOwnerAdoptsOtherCallsLease: two goroutines of one owner
// (a shared owner context) wait in a fair lock's queue, where the owner
// has one entry: G2 with Lock (the watchdog's lease), then G1 with
// LockFor(300 ms), whose ask comes last and so sets the lease the entry
// asks for. The holder, in another Client, unlocks: Redis hands the lock
// to the owner by message, for 300 ms. Another owner X, next in the
// queue, takes the lock when those 300 ms have run out.
//
// Contract: a lock context is done no later than the moment another
// owner can take the lock. So once X holds the lock, none of the owner's
// lock contexts may still be live.
//
// On the current code the message goes to both goroutines, and G2 may
// adopt it (fairqueue.go adopt) as if Redis had granted its own call's
// lease: it reckons the hold's deadline from the watchdog's 30 s lease
// and has the watchdog renew it every 10 s, while Redis set 300 ms. X
// then holds the lock beside a live lock context of the owner for
// seconds.
func TestFairSharedOwnerAdoptsOtherCallsLease(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	admin := s.Client(t)
	holderC := newRlock(t, s.Client(t))
	c := newRlock(t, s.Client(t))
	xc := newRlock(t, s.Client(t))
	const short = 300 * time.Millisecond
	overlaps := 0
	const rounds = 6
	for i := range rounds {
		name := fmt.Sprintf("%s:%d", redistest.LockName(t), i)
		holder := holderC.FairMutex(name)
		held, err := holder.Lock(t.Context())
		require.NoError(t, err)
		owner := sharedOwner(t, c, name)
		fm := c.FairMutex(name)
		octx, cancel := context.WithCancel(owner)
		got2 := lockWith(fm, octx)
		waitParked(t, fm, 1)
		got1 := make(chan lockResult2, 1)
		go func() {
			lctx, err := fm.LockFor(octx, short)
			got1 <- lockResult2{lctx, err}
		}()
		waitParked(t, fm, 2)
		waitQueued(t, admin, name, 1)
		x := xc.FairMutex(name)
		xctx, xcancel := context.WithCancel(t.Context())
		gotX := lockWith(x, xctx)
		waitQueued(t, admin, name, 2)
		time.Sleep(2 * short) // G1's own ask is older than its lease now

		require.NoError(t, holder.Unlock(held))
		r1 := receive(t, got1, "G1's LockFor")
		r2 := receive(t, got2, "G2's Lock")
		require.NoError(t, r1.err)
		require.NoError(t, r2.err)
		select {
		case rx := <-gotX:
			require.NoError(t, rx.err)
			// X holds the lock. Give the owner's contexts a second, far
			// beyond any timer's lateness, to be done.
			time.Sleep(time.Second)
			live1, live2 := r1.ctx.Err() == nil, r2.ctx.Err() == nil
			if live1 || live2 {
				overlaps++
				t.Logf("round %d: X holds the lock and the owner's contexts are live 1 s later: G1 %v, G2 %v", i, live1, live2)
			}
			require.NoError(t, x.Unlock(rx.ctx))
			_ = fm.Unlock(r1.ctx)
			_ = fm.Unlock(r2.ctx)
		case <-time.After(3 * time.Second):
			// The owner re-entered with a longer lease and holds the lock:
			// no overlap this round. Let go, and let X through.
			require.NoError(t, fm.Unlock(r1.ctx))
			require.NoError(t, fm.Unlock(r2.ctx))
			rx := receive(t, gotX, "X's Lock after the owner's Unlocks")
			require.NoError(t, rx.err)
			require.NoError(t, x.Unlock(rx.ctx))
		}
		xcancel()
		cancel()
	}
	assert.Zero(t, overlaps, "rounds (of %d) in which another owner held the lock beside a live lock context", rounds)
}
