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

// TestFairLostHoldUnlockHandsHeirByMessage: F holds a fair lock, G (same
// Client) waits queued and parked. F's hold vanishes in Redis (its key is
// lost: failover, eviction, an expiry F's Client has not noticed yet). F's
// Unlock names G as heir, and finds F holds nothing: it answers NOT_HELD,
// so the free lock must reach G by a message, not by the reply, which
// tells F's Client nothing of G (a hand-over by reply left G holding the
// lock unaware, asleep until its timer: a whole lease).
func TestFairLostHoldUnlockHandsHeirByMessage(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	c := newRlock(t, s.Client(t), rlock.WithLeaseTime(20*time.Second))
	fm := c.FairMutex(name)
	held, err := fm.Lock(t.Context())
	require.NoError(t, err)

	gctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan error, 1)
	go func() {
		lctx, err := fm.Lock(gctx)
		if err == nil {
			err = fm.Unlock(lctx)
		}
		got <- err
	}()
	waitQueued(t, admin, name, 1)
	redistest.Eventually(t, "G parks after its refusal", func(context.Context) error {
		return redistest.Exactly("parked", rlock.Parked(fm), 1)
	})

	k := fairKeys(name)
	require.NoError(t, admin.Do(t.Context(), admin.B().Del().Key(k.Hash).Build()).Error()) // F's hold is lost
	assert.ErrorIs(t, fm.Unlock(held), rlock.ErrNotHeld)

	select {
	case err := <-got:
		assert.NoError(t, err)
	case <-time.After(3 * time.Second):
		fields, _ := admin.Do(t.Context(), admin.B().Hgetall().Key(k.Hash).Build()).AsStrMap()
		pt, _ := admin.Do(t.Context(), admin.B().Pttl().Key(k.Hash).Build()).AsInt64()
		t.Errorf("G was not given the lock within 3s of F's Unlock; in Redis the lock hash is %v (pttl %d ms): G holds it unknowingly", fields, pt)
		cancel()
		<-got
	}
}

// TestFairLostHoldUnlockWakesOtherClient is
// TestFairLostHoldUnlockHandsHeirByMessage with the waiter on another
// Client (so no heir is named): the lock goes on by message, and the
// waiter gets it at once.
func TestFairLostHoldUnlockWakesOtherClient(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	fm := newRlock(t, s.Client(t), rlock.WithLeaseTime(20*time.Second)).FairMutex(name)
	other := newRlock(t, s.Client(t), rlock.WithLeaseTime(20*time.Second)).FairMutex(name)
	held, err := fm.Lock(t.Context())
	require.NoError(t, err)

	got := make(chan error, 1)
	go func() {
		lctx, err := other.Lock(t.Context())
		if err == nil {
			err = other.Unlock(lctx)
		}
		got <- err
	}()
	waitQueued(t, admin, name, 1)
	require.NoError(t, admin.Do(t.Context(), admin.B().Del().Key(fairKeys(name).Hash).Build()).Error())
	assert.ErrorIs(t, fm.Unlock(held), rlock.ErrNotHeld)
	select {
	case err := <-got:
		assert.NoError(t, err)
	case <-time.After(3 * time.Second):
		t.Fatal("the other Client's waiter was not handed the lock within 3s")
	}
}
