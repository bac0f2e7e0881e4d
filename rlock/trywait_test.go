package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// excluder returns the kind whose hold makes k's take wait: k itself,
// but for a read, which a write excludes.
func excluder(k lockKind) lockKind {
	if k.name != "RWMutex.RLock" {
		return k
	}
	for _, w := range lockKinds {
		if w.name == "RWMutex.Lock" {
			return w
		}
	}
	panic("no RWMutex.Lock kind")
}

// TestTryWaitOnFreeContendedLockTakesIt: a Client whose waiter just gave
// up a lock another Client held still knows the lock as contended (its
// subscription lingers), and a new owner's try with a positive wait goes
// straight to the wait, which subscribes first. On the lock, free by then,
// a try with a wait too short for the subscription (1 ns, 1 µs) takes it,
// as a try with wait 0 does: no wait tries less than none. (It returned
// false without asking Redis: its wait ran out in the subscribe, and the
// attempt it skipped was never made.)
func TestTryWaitOnFreeContendedLockTakesIt(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	holder, c := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	for _, k := range lockKinds {
		for _, wait := range []time.Duration{time.Nanosecond, time.Microsecond} {
			t.Run(k.name+"/"+wait.String(), func(t *testing.T) {
				name := redistest.LockName(t)
				block := excluder(k)
				hctx, ok, err := block.take(holder, name, t.Context(), 0)
				require.NoError(t, err)
				require.True(t, ok, "the holder takes the free primitive")
				ctx, cancel := context.WithCancel(t.Context())
				got := make(chan error, 1)
				go func() {
					_, _, err := k.take(c, name, ctx, time.Minute)
					got <- err
				}()
				redistest.Eventually(t, "the waiter subscribed", func(ctx context.Context) error {
					return redistest.Exactly("waiting Clients", waiting(ctx, raw, name), 1)
				})
				cancel()
				require.ErrorIs(t, receive(t, got, k.name), context.Canceled)
				require.NoError(t, block.give(holder, name, hctx))

				lctx, ok, err := k.take(c, name, t.Context(), wait)
				require.NoError(t, err)
				require.True(t, ok, "a try with a wait of %v on the free primitive takes it", wait)
				assert.NoError(t, k.give(c, name, lctx))
			})
		}
	}
}

// TestHandedWithoutAskingHoldsOneLevel: a new owner's Lock on a Mutex its
// Client knows is contended skips its first attempt, and, arriving behind
// a hold of its own Client, parks without asking; that hold's release hands
// it the lock. It holds one level, and its one Unlock frees the lock.
// (The acquire, which had made no attempt, made one on its way out: a
// re-entry, two levels, and the watchdog renewed the second for good.)
func TestHandedWithoutAskingHoldsOneLevel(t *testing.T) {
	c := sharedClient(t)
	m := c.Mutex(redistest.LockName(t))
	lock := func() <-chan context.Context {
		got := make(chan context.Context, 1)
		go func() {
			lctx, err := m.Lock(t.Context())
			assert.NoError(t, err)
			got <- lctx
		}()
		return got
	}
	held, err := m.Lock(t.Context())
	require.NoError(t, err)
	for range 3 { // each waiter arrives once the Client knows the lock contended
		next := lock()
		waitParked(t, m, 1)
		require.NoError(t, m.Unlock(held), "hands the lock to the parked waiter")
		held = receive(t, next, "the waiter")
		n, err := m.HoldCount(held)
		require.NoError(t, err)
		require.Equal(t, 1, n, "a Lock handed the lock holds one level")
	}
	require.NoError(t, m.Unlock(held))
	locked, err := m.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "each Lock's one Unlock left the lock free")
}
