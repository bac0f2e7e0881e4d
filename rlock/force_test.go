package rlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestForceWakesEveryWaiter: an operator's ForceUnlock of an RWMutex held
// for writing lets both readers waiting on two other Clients in at once,
// and a Semaphore's ForceRelease lets its waiter in; neither waits out the
// holder's lease (30 s). The holder's own Client ends its hold's context
// when the force comes from it.
func TestForceWakesEveryWaiter(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	// soon bounds a wake-up: far below the 30 s lease a missed one would
	// wait, far above a loaded machine's round trip.
	const soon = 10 * time.Second

	t.Run("RWMutex", func(t *testing.T) {
		name := redistest.LockName(t)
		holder := newRlock(t, s.Client(t))
		wctx, err := holder.RWMutex(name).Lock(t.Context())
		require.NoError(t, err)
		got := make(chan error, 2)
		for range 2 {
			reader := newRlock(t, s.Client(t)).RWMutex(name)
			go func() {
				ctx, cancel := context.WithTimeout(t.Context(), soon)
				defer cancel()
				rctx, err := reader.RLock(ctx)
				if err == nil {
					err = reader.RUnlock(rctx)
				}
				got <- err
			}()
		}
		waitWaiting(t, raw, rwKeys(name), 2)
		forced, err := holder.RWMutex(name).ForceUnlock(t.Context())
		require.NoError(t, err)
		assert.True(t, forced, "there was a lock to delete")
		assert.ErrorIs(t, context.Cause(wctx), rlock.ErrLockLost, "the forcing Client's own hold ended")
		for range 2 {
			assert.NoError(t, receive(t, got, "a reader after ForceUnlock"))
		}
	})
	t.Run("Semaphore", func(t *testing.T) {
		name := redistest.LockName(t)
		holder := newRlock(t, s.Client(t)).Semaphore(name)
		_, err := holder.TrySetPermits(t.Context(), 1)
		require.NoError(t, err)
		_, err = holder.Acquire(t.Context())
		require.NoError(t, err)
		waiter := newRlock(t, s.Client(t)).Semaphore(name)
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), soon)
			defer cancel()
			pctx, err := waiter.Acquire(ctx)
			if err == nil {
				err = waiter.Release(pctx)
			}
			got <- err
		}()
		waitWaiting(t, raw, semaphoreKeys(name), 1)
		forced, err := newRlock(t, s.Client(t)).Semaphore(name).ForceRelease(t.Context())
		require.NoError(t, err)
		assert.True(t, forced, "a permit was out")
		assert.NoError(t, receive(t, got, "the waiter after ForceRelease"))
		n, err := waiter.Available(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 1, n, "the permits stay")
	})
}

// TestForceLeavesOwnersWaitersAsleep: another Client force-unlocks a Mutex
// and takes it while its owner, which does not know yet, still holds it
// here; a second goroutine of that owner asks to re-enter. Redis refuses,
// as it no longer has the owner's hold: the owner learns there and then
// that its hold was lost, while the other Client still holds (not at the
// watchdog's next renewal, nor when the lock comes back to it). The
// goroutine then waits as a fresh Lock, asleep for as long as the other
// holds (no ask a poke), and takes the lock afresh when the other lets go,
// under a newer fencing token.
func TestForceLeavesOwnersWaitersAsleep(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	rec := &hooktest.Recorder{}
	c := newRlock(t, s.Client(t), rlock.WithHooks(rec))
	m := c.Mutex(name)
	owner := sharedOwner(t, c, name)
	held, err := m.Lock(owner)
	require.NoError(t, err)

	other := newRlock(t, s.Client(t)).Mutex(name)
	forced, err := other.ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, forced)
	taken, err := other.Lock(t.Context())
	require.NoError(t, err)
	otherToken, _ := other.FencingToken(taken)
	require.NoError(t, held.Err(), "the owner's Client has not learnt of the loss yet")

	type result struct {
		token int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		lctx, err := m.Lock(owner)
		var token int64
		if err == nil {
			token, _ = m.FencingToken(lctx)
			err = m.Unlock(lctx)
		}
		done <- result{token, err}
	}()
	waitWaits(t, rec, 1)
	assert.ErrorIs(t, context.Cause(held), rlock.ErrLockLost, "the refused re-entry told the owner, while the other Client holds")
	const heldFor = time.Second
	time.Sleep(heldFor) // the other Client holds; the waiter should sleep
	require.NoError(t, other.Unlock(taken))
	got := receive(t, done, "the owner's second goroutine after the other Client's Unlock")
	require.NoError(t, got.err, "it took the lock afresh")
	assert.Greater(t, got.token, otherToken, "a new hold's token")
	assert.ErrorIs(t, m.Unlock(held), rlock.ErrNotHeld, "the lost hold has nothing to leave")

	ends := rec.Snapshot().Acquires
	require.Len(t, ends, 3, "the shared owner's own lock, the first Lock and the re-entry")
	assert.True(t, ends[2].Waited)
	assert.LessOrEqual(t, ends[2].Attempts, 3, "the refused re-entry slept while the other Client held the lock, %v", heldFor)
}

// TestForceThenReentryIsANewHold: an owner's lock is force-unlocked by
// another Client (and taken for writing and let go there), and then the
// owner, not told yet, Locks again through its lock context. Redis takes
// the lock afresh, at count 1 and under a new fencing token: the owner
// learns then that its hold was lost (someone else held the lock in
// between), its lock context is done with ErrLockLost, and its Lock, whose
// context is done, fails with that cause and gives the new level back. A
// Lock from a fresh context then carries the new token. For every kind
// whose acquire re-enters: Mutex, FairMutex, and RWMutex for writing and
// reading.
func TestForceThenReentryIsANewHold(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	for name, open := range forceKinds {
		t.Run(name, func(t *testing.T) {
			lockName := redistest.LockName(t)
			rec := &hooktest.Recorder{}
			m := open(newRlock(t, s.Client(t), rlock.WithHooks(rec)), lockName)
			owner, err := m.Lock(t.Context())
			require.NoError(t, err)
			oldToken, ok := m.FencingToken(owner)
			require.True(t, ok)

			other := open(newRlock(t, s.Client(t)), lockName)
			_, err = other.ForceUnlock(t.Context())
			require.NoError(t, err)
			writer := other // takes it for writing, which moves the token on
			if name == "RWMutex/read" {
				writer = newRlock(t, s.Client(t)).RWMutex(lockName)
			}
			taken, err := writer.Lock(t.Context())
			require.NoError(t, err)
			otherToken, _ := writer.FencingToken(taken)
			assert.Greater(t, otherToken, oldToken)
			require.NoError(t, writer.Unlock(taken))
			require.NoError(t, owner.Err(), "the owner's Client has not learnt of the loss yet")

			_, err = m.Lock(owner)
			assert.ErrorIs(t, err, rlock.ErrLockLost, "a re-entry Redis answered with a new hold")
			assert.ErrorIs(t, context.Cause(owner), rlock.ErrLockLost, "the old hold ended when Redis took the lock afresh")
			locked, err := m.IsLocked(t.Context())
			require.NoError(t, err)
			assert.False(t, locked, "the level granted to a done context was given back")
			assert.ErrorIs(t, m.Unlock(owner), rlock.ErrNotHeld)
			ends := rec.Snapshot().Ends
			if assert.NotEmpty(t, ends) {
				assert.Equal(t, oldToken, ends[0].Token)
				assert.Equal(t, rlock.EndGone, ends[0].Reason, "the hooks hear that Redis no longer held it")
			}

			again, err := m.Lock(t.Context())
			require.NoError(t, err)
			token, ok := m.FencingToken(again)
			require.True(t, ok)
			assert.GreaterOrEqual(t, token, otherToken, "the new hold's token")
			assert.Greater(t, token, oldToken)
			n, err := m.HoldCount(again)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			require.NoError(t, m.Unlock(again))
		})
	}
}

// TestReleaseFindingLevelsLostEndsTheHold: an owner's goroutines hold a
// Mutex at three levels, and Redis comes to hold fewer of them (one here,
// written straight into its hash, as a failover that lost the latest
// writes leaves it). The Unlock that finds so reports ErrNotHeld, and the
// hold ends at once with ErrLockLost: without that, the next Unlock would
// free the lock under the goroutine that still counts on a level.
func TestReleaseFindingLevelsLostEndsTheHold(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	name := redistest.LockName(t)
	m := newRlock(t, s.Client(t)).Mutex(name)
	first, err := m.Lock(t.Context())
	require.NoError(t, err)
	second, err := m.Lock(first)
	require.NoError(t, err)
	third, err := m.Lock(second)
	require.NoError(t, err)
	hash := lockKeys(name).Hash
	owners := ownerFields(t, raw, hash)
	require.Len(t, owners, 1)
	for owner, count := range owners {
		require.Equal(t, "3", count)
		require.NoError(t, raw.Do(t.Context(), raw.B().Hset().Key(hash).FieldValue().FieldValue(owner, "1").Build()).Error())
	}

	assert.ErrorIs(t, m.Unlock(third), rlock.ErrNotHeld, "Redis held one level, not three")
	assert.ErrorIs(t, context.Cause(first), rlock.ErrLockLost, "the hold ended as soon as a release found its levels lost")
	for _, ctx := range []context.Context{second, first} {
		if err := m.Unlock(ctx); err != nil {
			assert.ErrorIs(t, err, rlock.ErrNotHeld)
		}
	}
	locked, err := m.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the level Redis had is left once every goroutine has left")
}

// TestForceReleaseThenAcquireIsANewHold: as TestForceThenReentryIsANewHold
// for a Semaphore's permits: after another Client's ForceRelease, the
// owner's next Acquire through its permit context is granted afresh, at
// one permit; the owner learns that its permits were lost, and the permit
// granted to its done context is given back.
func TestForceReleaseThenAcquireIsANewHold(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	sem := newRlock(t, s.Client(t)).Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	owner, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	owner, err = sem.Acquire(owner)
	require.NoError(t, err)

	forced, err := newRlock(t, s.Client(t)).Semaphore(name).ForceRelease(t.Context())
	require.NoError(t, err)
	require.True(t, forced)
	require.NoError(t, owner.Err(), "the owner's Client has not learnt of the loss yet")

	_, err = sem.Acquire(owner)
	assert.ErrorIs(t, err, rlock.ErrLockLost, "an Acquire Redis answered with a new hold")
	assert.ErrorIs(t, context.Cause(owner), rlock.ErrLockLost)
	n, err := sem.Available(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the permit granted to a done context was given back")
	assert.ErrorIs(t, sem.Release(owner), rlock.ErrNotHeld)

	again, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	held, err := sem.HoldCount(again)
	require.NoError(t, err)
	assert.Equal(t, 1, held)
	require.NoError(t, sem.Release(again))
}

// TestHostileSharedOwnerUnderForce: eight goroutines of one owner (an owner
// context that holds another lock) take, re-enter and leave a lock over
// and over, while another Client force-unlocks it and takes it now and
// then, so that the owner's holds are lost under its goroutines, found
// lost by their Locks, and begun again. Every call ends with the lock, or
// with ErrLockLost or ErrNotHeld for a hold the force ended; and once they
// have all left, the lock is free at once and the owner holds no level:
// no level of an ended hold is left behind, held, or renewed. For Mutex,
// FairMutex, and RWMutex for writing and for reading.
func TestHostileSharedOwnerUnderForce(t *testing.T) {
	for kind, open := range forceKinds {
		t.Run(kind, func(t *testing.T) {
			s, name, owner, m := ownedLock(t, open)
			other := open(newRlock(t, s.Client(t)), name)

			stop, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
			defer cancel()
			var wg sync.WaitGroup
			var holds, lost atomic.Int64
			expected := func(err error) bool {
				return err == nil || errors.Is(err, rlock.ErrLockLost) || errors.Is(err, rlock.ErrNotHeld)
			}
			for range 8 {
				wg.Go(func() {
					for stop.Err() == nil {
						lctx, err := m.Lock(owner)
						if !assert.True(t, expected(err), "Lock: %v", err) || err != nil {
							lost.Add(1)
							continue
						}
						holds.Add(1)
						before := lctx.Err() // for the failure message: was it done before the call?
						inner, err := m.Lock(lctx)
						assert.True(t, expected(err), "re-entry: %v (the lock context's error before it %v, its cause now %v)", err, before, context.Cause(lctx))
						time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
						if err == nil {
							assert.True(t, expected(m.Unlock(inner)))
						}
						if err := m.Unlock(lctx); !assert.True(t, expected(err), "Unlock: %v", err) || err != nil {
							lost.Add(1)
						}
					}
				})
			}
			wg.Go(func() {
				for stop.Err() == nil {
					time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
					_, err := other.ForceUnlock(t.Context())
					assert.NoError(t, err)
					if rand.IntN(2) == 0 {
						if octx, ok, err := other.TryLock(t.Context(), 0, 0); assert.NoError(t, err) && ok {
							time.Sleep(time.Millisecond)
							assert.True(t, expected(other.Unlock(octx)))
						}
					}
				}
			})
			waitGroup(t, &wg, redistest.Patience, "every goroutine stops")
			t.Logf("holds %d, calls that found theirs lost %d", holds.Load(), lost.Load())
			assert.Positive(t, lost.Load(), "the force ended some holds")
			n, err := m.HoldCount(owner)
			require.NoError(t, err)
			assert.Zero(t, n, "the owner holds no level")
			locked, err := m.IsLocked(t.Context())
			require.NoError(t, err)
			assert.False(t, locked, "the lock is free once every goroutine has left it")
		})
	}
}

// forceable is a lock of any kind that re-enters, as the tests of forced
// losses drive it.
type forceable interface {
	hotLock
	ForceUnlock(ctx context.Context) (bool, error)
	TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error)
}

// forceKinds are the kinds whose acquire re-enters, as the tests of forced
// losses open them: Mutex, FairMutex, and RWMutex for writing and for
// reading.
var forceKinds = map[string]func(c *rlock.Client, name string) forceable{
	"Mutex":        func(c *rlock.Client, name string) forceable { return c.Mutex(name) },
	"FairMutex":    func(c *rlock.Client, name string) forceable { return c.FairMutex(name) },
	"RWMutex":      func(c *rlock.Client, name string) forceable { return c.RWMutex(name) },
	"RWMutex/read": func(c *rlock.Client, name string) forceable { return readSide{c.RWMutex(name)} },
}

// ownedLock opens a lock with open on a Client of its own, and returns
// the setup it runs on, its name, and an owner context for goroutines to
// share (sharedOwner), which holds no level of it.
func ownedLock(t *testing.T, open func(c *rlock.Client, name string) forceable) (redistest.Setup, string, context.Context, forceable) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	return s, name, sharedOwner(t, c, name), open(c, name)
}

// readSide is an RWMutex's read lock as a lock of its own.
type readSide struct{ *rlock.RWMutex }

func (r readSide) Lock(ctx context.Context) (context.Context, error) { return r.RLock(ctx) }
func (r readSide) Unlock(ctx context.Context) error                  { return r.RUnlock(ctx) }
func (r readSide) HoldCount(ctx context.Context) (int, error)        { return r.RHoldCount(ctx) }
func (r readSide) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	return r.TryRLock(ctx, wait, lease)
}
