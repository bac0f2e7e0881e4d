package rlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFairSharedOwnerGiveUpKeepsNote: two goroutines of one owner wait in
// a fair lock's queue behind W, which waits for a fixed lease of 2 s. The
// first, X, was refused with the holder's pttl, some 20 to 30 s, and
// sleeps that long. The second, Y, is refused with 1 s (W's own lease is
// cut short in Redis for its ask, then put back) and gives up. When W is
// handed the lock and lets its fixed lease run out, X must take the lock
// within seconds: the hand-over tells the owner of W's lease, since the
// owner's entry keeps the later of its calls' wake-up times (W#wake,
// lua/queue.lua laterWake). Had it kept Y's, the hand-over would count on
// a call that is gone, and X would sleep on while the lock is free.
func TestFairSharedOwnerGiveUpKeepsNote(t *testing.T) {
	const fixed = 2 * time.Second
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	k := fairKeys(name)

	holder := newRlock(t, s.Client(t)).FairMutex(name)
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)

	// W's Client renews its entry every 30 s: not during the test.
	w := newRlock(t, s.Client(t), rlock.WithLeaseTime(90*time.Second)).FairMutex(name)
	gotW := make(chan lockResult2, 1)
	go func() {
		lctx, err := w.LockFor(t.Context(), fixed)
		gotW <- lockResult2{lctx, err}
	}()
	waitQueued(t, admin, name, 1)
	wField := queued(t, admin, name)[0]

	c := newRlock(t, s.Client(t))
	owner := sharedOwner(t, c, name)
	fm := c.FairMutex(name)
	ctxX, cancelX := context.WithCancel(owner)
	defer cancelX()
	gotX := lockWith(fm, ctxX)
	waitQueued(t, admin, name, 2)
	waitParked(t, fm, 1)

	// Y asks while W's own lease has 1 s left, then gives up.
	wExp, err := admin.Do(t.Context(), admin.B().Hget().Key(k.Queue).Field(wField+"#exp").Build()).ToString()
	require.NoError(t, err)
	setExp := func(v string) {
		require.NoError(t, admin.Do(t.Context(), admin.B().Hset().Key(k.Queue).FieldValue().FieldValue(wField+"#exp", v).Build()).Error())
	}
	setExp(strconv.FormatInt(redistest.Millis(t, admin)+1000, 10))
	ctxY, cancelY := context.WithCancel(owner)
	defer cancelY()
	gotY := lockWith(fm, ctxY)
	waitParked(t, fm, 2)
	setExp(wExp)
	cancelY()
	require.ErrorIs(t, receive(t, gotY, "Y, which gave up").err, context.Canceled)

	require.NoError(t, holder.Unlock(held))
	rw := receive(t, gotW, "W's LockFor")
	require.NoError(t, rw.err)
	granted := time.Now()
	// W does not unlock: its fixed lease ends its hold.
	select {
	case rx := <-gotX:
		require.NoError(t, rx.err)
		// The bound is the property: X asks when W's lease ends, give or
		// take a loaded machine's seconds; told nothing, it would sleep
		// out the 20 s or more it was refused with.
		assert.Less(t, time.Since(granted), fixed+5*time.Second, "X took the lock soon after W's fixed lease ended")
		require.NoError(t, fm.Unlock(rx.ctx))
	case <-time.After(fixed + 15*time.Second):
		assert.Fail(t, "X still sleeps 15 s after W's fixed lease ended", "queue %v", queued(t, admin, name))
		cancelX()
		if rx := <-gotX; rx.err == nil {
			require.NoError(t, fm.Unlock(rx.ctx))
		}
	}
}
