package rlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestFirstLockContext: a hold's first lock context, which makes its
// cancellation only when asked for it, answers as a
// context.WithCancelCause of its parent that the hold's end cancels with
// its cause would, whenever it is asked: before or after the end, with
// its parent done before, after, or never, and with Done or a derived
// context asked for before the end or not.
func TestFirstLockContext(t *testing.T) {
	errGone := errors.New("gone")
	type key struct{}
	for _, tc := range []struct {
		name          string
		watch         bool // Done asked for before the end
		derive        bool // a context derived before the end
		parentFirst   bool // the parent is done before the hold ends
		parentAfter   bool // the parent is done after the hold ends
		wantCauseGone bool // else the parent's cause
	}{
		{name: "ended, unwatched", wantCauseGone: true},
		{name: "ended, watched", watch: true, wantCauseGone: true},
		{name: "ended, derived", derive: true, wantCauseGone: true},
		{name: "ended, then parent", parentAfter: true, wantCauseGone: true},
		{name: "ended, watched, then parent", watch: true, parentAfter: true, wantCauseGone: true},
		{name: "parent, then ended", parentFirst: true},
		{name: "parent, watched, then ended", parentFirst: true, watch: true},
		{name: "parent, derived, then ended", parentFirst: true, derive: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
			defer cancel(nil)
			h := &hold{}
			lctx := h.bind(parent)
			require.Same(t, (*holdNode)(h), lctx, "the first lock context is the hold")
			require.NoError(t, lctx.Err())
			require.NoError(t, context.Cause(lctx))
			assert.Equal(t, "v", lctx.Value(key{}), "the parent's values")
			if tc.watch {
				select {
				case <-lctx.Done():
					t.Fatal("done before the end")
				default:
				}
			}
			var derived context.Context
			if tc.derive {
				var stop context.CancelFunc
				derived, stop = context.WithCancel(lctx)
				defer stop()
			}
			if tc.parentFirst {
				cancel(context.DeadlineExceeded)
			}
			h.life.end(errGone)
			if tc.parentAfter {
				cancel(context.DeadlineExceeded)
			}
			wantCause := error(context.DeadlineExceeded) // the parent's
			if tc.wantCauseGone {
				wantCause = errGone
			}
			assert.ErrorIs(t, lctx.Err(), context.Canceled)
			assert.ErrorIs(t, context.Cause(lctx), wantCause)
			select {
			case <-lctx.Done():
			default:
				t.Fatal("not done after the end")
			}
			if derived != nil {
				<-derived.Done()
				assert.ErrorIs(t, context.Cause(derived), wantCause, "a derived context ends as the lock context")
			}
			assert.Equal(t, "v", lctx.Value(key{}), "the parent's values, after the end too")
			assert.Same(t, (*holdNode)(h), lctx.Value(boundKey{}))
		})
	}
}

// TestLaterLockContext: a hold bound again, into a context that does not
// carry it, gets a context of its own, done with the hold's cause; so
// does a hold bound after it ended, at once.
func TestLaterLockContext(t *testing.T) {
	errGone := errors.New("gone")
	h := &hold{}
	first := h.bind(context.Background())
	later := h.bind(context.Background())
	require.NotSame(t, first, later)
	require.NoError(t, later.Err())
	h.life.end(errGone)
	assert.ErrorIs(t, context.Cause(first), errGone)
	assert.ErrorIs(t, context.Cause(later), errGone)

	ended := &hold{}
	ended.life.end(errGone)
	lctx := ended.bind(context.Background())
	assert.ErrorIs(t, lctx.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(lctx), errGone)
}

// TestNewHoldOwnsItsLevels: a hold owns the levels granted through it and
// no others. An owner shared by goroutines (an owner context that holds
// another lock) holds a lock at two levels when that hold ends here while
// Redis keeps it (its deadline passed in a pause, say); its next Lock
// begins a new hold at one level, letting the ended one's two go. An
// Unlock with the ended hold's contexts then gets ErrNotHeld, and the new
// hold's one Unlock frees the lock: nothing is left held and renewed. And
// when the reply of a re-entry comes after its hold ended (keep), the new
// hold gives back the levels below its own, unless Redis lost them all
// meanwhile: then the grant fails as lost.
func TestNewHoldOwnsItsLevels(t *testing.T) {
	node := redistest.Shared(t)
	raw := node.Client(t)
	c := openClient(t, node)
	name := redistest.LockName(t)
	owner, err := c.Mutex(name + ":other").Lock(t.Context())
	require.NoError(t, err)
	m := c.Mutex(name)
	l := m.engine()
	redisCount := func() int {
		n, err := raw.Do(t.Context(), raw.B().Hget().Key(l.keys.Hash()).Field(l.holdID(ownerOf(t, owner)).field).Build()).AsInt64()
		require.NoError(t, err)
		return int(n)
	}

	first, err := m.Lock(owner)
	require.NoError(t, err)
	inner, err := m.Lock(first)
	require.NoError(t, err)
	require.Equal(t, 2, redisCount())
	h, _ := nearestBound(first)
	h.finish(errDeadlinePassed) // ended here; Redis keeps both levels

	later, err := m.Lock(owner)
	require.NoError(t, err)
	assert.Equal(t, 1, redisCount(), "the new hold's one level; the ended hold's let go")
	assert.ErrorIs(t, m.Unlock(inner), ErrNotHeld)
	assert.ErrorIs(t, m.Unlock(first), ErrNotHeld)
	require.NoError(t, later.Err())
	require.NoError(t, m.Unlock(later))
	locked, err := m.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the new hold's final Unlock freed the lock")

	// A re-entry's reply after its hold ended: Redis counts 2, one of them
	// the ended hold's.
	first, err = m.Lock(owner)
	require.NoError(t, err)
	_, err = m.Lock(first)
	require.NoError(t, err)
	tr, err := c.take(t.Context(), l.holdID(ownerOf(t, owner)))
	require.NoError(t, err)
	held, _ := nearestBound(first)
	held.finish(errDeadlinePassed)
	tr.count = 1 // as before the re-entry, whose grant comes now
	err = l.keep(t.Context(), tr, grant{acquired: true, count: 2, token: held.token}, time.Now(), 0)
	require.NoError(t, err)
	assert.Equal(t, 1, tr.count)
	assert.NotSame(t, held, tr.hold)
	assert.NotNil(t, tr.activeHold(), "a new hold")
	later, err = l.bound(owner, tr) // as the re-entry's call does, in its turn
	c.give(tr)
	require.NoError(t, err)
	assert.Equal(t, 1, redisCount(), "the levels below the new hold's were given back")
	require.NoError(t, m.Unlock(later))
	locked, err = m.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked)

	// The same, with the lock gone from Redis before the levels below are
	// given back: no new hold, and the grant fails as lost.
	first, err = m.Lock(owner)
	require.NoError(t, err)
	_, err = m.Lock(first)
	require.NoError(t, err)
	tr, err = c.take(t.Context(), l.holdID(ownerOf(t, owner)))
	require.NoError(t, err)
	held, _ = nearestBound(first)
	held.finish(errDeadlinePassed)
	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(l.keys.Hash()).Build()).Error())
	tr.count = 1
	err = l.keep(t.Context(), tr, grant{acquired: true, count: 2, token: held.token}, time.Now(), 0)
	assert.ErrorIs(t, err, ErrLockLost)
	assert.Zero(t, tr.count)
	assert.Same(t, held, tr.hold, "no new hold")
	c.give(tr)
	require.NoError(t, c.Mutex(name+":other").Unlock(owner))
}

// openClient returns a Client on node, closed when t ends.
func openClient(t *testing.T, node *redistest.Node) *Client {
	t.Helper()
	c, err := New(node.Client(t))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// ownerOf returns the owner ctx carries.
func ownerOf(t *testing.T, ctx context.Context) *owner {
	t.Helper()
	o, ok := ownerFrom(ctx)
	require.True(t, ok)
	return o
}

// holdHooks records which of HoldStart and HoldEnd the hooks heard, in
// order.
type holdHooks struct {
	NopHooks
	mu    sync.Mutex
	heard []string
}

func (k *holdHooks) HoldStart(HoldStart) { k.hear("start") }
func (k *holdHooks) HoldEnd(HoldEnd)     { k.hear("end") }

func (k *holdHooks) hear(what string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.heard = append(k.heard, what)
}

// TestHoldGrantedAfterCloseBegins: a grant whose reply comes after Close
// collected the Client's holds makes a hold that ends at once; the hooks
// hear that it began before they hear that it ended.
func TestHoldGrantedAfterCloseBegins(t *testing.T) {
	hk := &holdHooks{}
	c, err := New(redistest.Shared(t).Client(t), WithHooks(hk))
	require.NoError(t, err)
	l := c.Mutex(redistest.LockName(t)).engine()
	_, o := withOwner(t.Context())
	tr, err := c.take(t.Context(), l.holdID(o))
	require.NoError(t, err)
	require.NoError(t, c.Close())

	h := newHold(l, tr, 1) // as the grant recorded after Close
	c.give(tr)
	assert.ErrorIs(t, h.life.Cause(), ErrClosed)
	hk.mu.Lock()
	defer hk.mu.Unlock()
	assert.Equal(t, []string{"start", "end"}, hk.heard)
}

// TestNewPermitHoldWakesWaiters: an owner's permit hold ends here while
// Redis keeps its two permits (as after a failed Release); the owner's
// next Acquire begins a new hold of one, which gives the other back, and a
// waiter in another Client takes it at once, not when the holder's
// thirty-second lease would run out.
func TestNewPermitHoldWakesWaiters(t *testing.T) {
	node := redistest.Shared(t)
	c, other := openClient(t, node), openClient(t, node)
	name := redistest.LockName(t)
	owner, err := c.Mutex(name + ":other").Lock(t.Context())
	require.NoError(t, err)
	sem := c.Semaphore(name)
	_, err = sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	first, err := sem.Acquire(owner)
	require.NoError(t, err)
	_, err = sem.Acquire(first)
	require.NoError(t, err)

	raw := node.Client(t)
	took := make(chan error, 1)
	go func() {
		permit, err := other.Semaphore(name).Acquire(t.Context())
		if err == nil {
			err = other.Semaphore(name).Release(permit)
		}
		took <- err
	}()
	redistest.Eventually(t, "the waiter was refused", func(ctx context.Context) error {
		marked, err := raw.Do(ctx, raw.B().Hexists().Key(sem.engine().keys.Hash()).Field("waiters").Build()).AsBool()
		if err == nil && !marked {
			err = errors.New("no waiter marked")
		}
		return err
	})
	h, _ := nearestBound(first)
	h.finish(errDeadlinePassed) // ended here; Redis keeps both permits

	again, err := sem.Acquire(owner)
	require.NoError(t, err)
	select {
	case err := <-took:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not told of the permit given back")
	}
	require.NoError(t, sem.Release(again))
	require.NoError(t, c.Mutex(name+":other").Unlock(owner))
}

// TestHoldEndedHasCause: a hold is marked ended and given its cause in one
// critical section, so whoever reads the mark under the lifetime's mu
// (record, Renewed) never finds it ended with no cause yet: record would
// then let a re-entry be recorded on a hold that is ending.
func TestHoldEndedHasCause(t *testing.T) {
	c := openClient(t, redistest.Shared(t))
	l := c.Mutex(redistest.LockName(t)).engine()
	for range 2000 {
		_, o := withOwner(t.Context())
		tr, err := c.take(t.Context(), l.holdID(o))
		require.NoError(t, err)
		h := newHold(l, tr, 1)
		c.give(tr)
		ending := make(chan struct{})
		go func() {
			defer close(ending)
			h.finish(ErrLockLost)
		}()
		for ended := false; !ended; {
			h.life.mu.Lock()
			ended = h.ended
			cause := h.life.cause
			h.life.mu.Unlock()
			require.False(t, ended && cause == nil, "a hold found ended with no cause")
		}
		<-ending
	}
}
