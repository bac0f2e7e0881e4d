package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestLifecycleCloseWakesEveryKindWithHooks: Close with a holder and
// waiters on every kind of one Client; every waiter returns ErrClosed,
// every hold's context ends with ErrLockLost and ErrClosed, and the hooks
// balance with OutcomeClosed and EndClosed.
func TestLifecycleCloseWakesEveryKindWithHooks(t *testing.T) {
	rec := &hooktest.Recorder{}
	rc := redistest.Shared(t).Client(t)
	c, err := rlock.New(rc, rlock.WithHooks(rec))
	require.NoError(t, err)
	other := sharedClient(t)
	ctx := t.Context()
	name := redistest.LockName(t)

	var holds []context.Context
	hold := func(lctx context.Context, err error) {
		t.Helper()
		require.NoError(t, err)
		holds = append(holds, lctx)
	}
	mu := c.Mutex(name)
	hold(mu.Lock(ctx))
	fm := c.FairMutex(name)
	hold(fm.Lock(ctx))
	rw := c.RWMutex(name)
	hold(rw.Lock(ctx))
	sem := c.Semaphore(name)
	_, err = sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	hold(sem.Acquire(ctx))
	latch := c.CountDownLatch(name)
	_, err = latch.TrySetCount(ctx, 1)
	require.NoError(t, err)
	ml := rlock.NewMultiLock(c.Mutex(name+":ml1"), other.Mutex(name+":ml2"))
	hold(ml.Lock(ctx))

	type result struct {
		what string
		err  error
	}
	results := make(chan result, 32)
	var wg sync.WaitGroup
	run := func(what string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- result{what, f()}
		}()
	}
	lockErr := func(_ context.Context, err error) error { return err }
	tryErr := func(_ context.Context, ok bool, err error) error {
		if ok {
			return errors.New("acquired")
		}
		return err
	}
	run("mutex Lock", func() error { return lockErr(mu.Lock(ctx)) })
	run("mutex TryLock", func() error { return tryErr(mu.TryLock(ctx, time.Hour, 0)) })
	run("fair Lock 1", func() error { return lockErr(fm.Lock(ctx)) })
	run("fair Lock 2", func() error { return lockErr(fm.Lock(ctx)) })
	run("fair TryLock", func() error { return tryErr(fm.TryLock(ctx, time.Hour, time.Minute)) })
	run("rw RLock", func() error { return lockErr(rw.RLock(ctx)) })
	run("rw Lock", func() error { return lockErr(rw.Lock(ctx)) })
	run("sem Acquire", func() error { return lockErr(sem.Acquire(ctx)) })
	run("sem AcquirePermit", func() error {
		_, err := sem.AcquirePermit(ctx, time.Minute)
		return err
	})
	run("latch Await", func() error { return latch.Await(ctx) })
	run("multilock Lock", func() error { return lockErr(ml.Lock(ctx)) })

	rec.WaitFor(t, "the acquires wait", func(e hooktest.Events) bool { return e.Waits >= 8 })
	redistest.Eventually(t, "the latch awaits", func(ctx context.Context) error {
		n, err := redistest.Subscribers(ctx, rc, latchChannel(name))
		if err != nil {
			return err
		}
		return redistest.Exactly("latch subscribers", n, 1)
	})

	require.NoError(t, c.Close())
	waitGroup(t, &wg, redistest.Patience, "every waiter returns after Close")
	close(results)
	for r := range results {
		assert.ErrorIs(t, r.err, rlock.ErrClosed, r.what)
	}
	for i, h := range holds {
		require.Error(t, h.Err(), "hold %d", i)
		assert.ErrorIs(t, context.Cause(h), rlock.ErrLockLost, "hold %d", i)
		assert.ErrorIs(t, context.Cause(h), rlock.ErrClosed, "hold %d", i)
	}
	s := rec.Balanced(t)
	for _, e := range s.Ends {
		assert.Equal(t, rlock.EndClosed, e.Reason, "%v", e.LockRef)
		assert.ErrorIs(t, e.Cause, rlock.ErrClosed, "%v", e.LockRef)
	}
	for _, a := range s.Acquires {
		if a.Outcome != rlock.OutcomeAcquired {
			assert.Equal(t, rlock.OutcomeClosed, a.Outcome, "%v: %v", a.LockRef, a.Err)
			assert.ErrorIs(t, a.Err, rlock.ErrClosed, "%v", a.LockRef)
		}
	}
	// ml's other part is still held by other; give it back.
	_ = ml.Unlock(holds[len(holds)-1])
}

func latchChannel(name string) string {
	return keys.NewLatch(rlock.DefaultKeyPrefix, name).Channel
}

// everyCall calls every method of every handle of c (made with name) with
// ctx, and returns each error by what was called; a panic is an error too.
func everyCall(c *rlock.Client, name string, ctx context.Context) map[string]error {
	out := map[string]error{}
	call := func(what string, f func() error) {
		defer func() {
			if p := recover(); p != nil {
				out[what] = errPanic{p}
			}
		}()
		out[what] = f()
	}
	e1 := func(_ any, err error) error { return err }
	e2 := func(_, _ any, err error) error { return err }
	mus := map[string]*rlock.Mutex{"mutex": c.Mutex(name), "grouped": c.GroupedMutex("g", name)}
	for k, mu := range mus {
		call(k+".Lock", func() error { return e1(mu.Lock(ctx)) })
		call(k+".LockFor", func() error { return e1(mu.LockFor(ctx, time.Second)) })
		call(k+".TryLock", func() error { return e2(mu.TryLock(ctx, 0, 0)) })
		call(k+".Unlock", func() error { return mu.Unlock(ctx) })
		call(k+".ForceUnlock", func() error { return e1(mu.ForceUnlock(ctx)) })
		call(k+".IsLocked", func() error { return e1(mu.IsLocked(ctx)) })
		call(k+".HoldCount", func() error { return e1(mu.HoldCount(ctx)) })
		call(k+".RemainingLease", func() error { return e1(mu.RemainingLease(ctx)) })
		call(k+".Inspect", func() error { return e1(mu.Inspect(ctx)) })
		call(k+".Do", func() error { return e1(mu.Do(ctx)) })
	}
	fm := c.FairMutex(name)
	call("fair.Lock", func() error { return e1(fm.Lock(ctx)) })
	call("fair.LockFor", func() error { return e1(fm.LockFor(ctx, time.Second)) })
	call("fair.TryLock", func() error { return e2(fm.TryLock(ctx, 0, 0)) })
	call("fair.Unlock", func() error { return fm.Unlock(ctx) })
	call("fair.ForceUnlock", func() error { return e1(fm.ForceUnlock(ctx)) })
	call("fair.IsLocked", func() error { return e1(fm.IsLocked(ctx)) })
	call("fair.HoldCount", func() error { return e1(fm.HoldCount(ctx)) })
	call("fair.RemainingLease", func() error { return e1(fm.RemainingLease(ctx)) })
	call("fair.Inspect", func() error { return e1(fm.Inspect(ctx)) })
	call("fair.Do", func() error { return e1(fm.Do(ctx)) })
	rw := c.RWMutex(name)
	call("rw.Lock", func() error { return e1(rw.Lock(ctx)) })
	call("rw.LockFor", func() error { return e1(rw.LockFor(ctx, time.Second)) })
	call("rw.TryLock", func() error { return e2(rw.TryLock(ctx, 0, 0)) })
	call("rw.Unlock", func() error { return rw.Unlock(ctx) })
	call("rw.RLock", func() error { return e1(rw.RLock(ctx)) })
	call("rw.RLockFor", func() error { return e1(rw.RLockFor(ctx, time.Second)) })
	call("rw.TryRLock", func() error { return e2(rw.TryRLock(ctx, 0, 0)) })
	call("rw.RUnlock", func() error { return rw.RUnlock(ctx) })
	call("rw.ForceUnlock", func() error { return e1(rw.ForceUnlock(ctx)) })
	call("rw.IsLocked", func() error { return e1(rw.IsLocked(ctx)) })
	call("rw.IsWriteLocked", func() error { return e1(rw.IsWriteLocked(ctx)) })
	call("rw.ReadHolders", func() error { return e1(rw.ReadHolders(ctx)) })
	call("rw.HoldCount", func() error { return e1(rw.HoldCount(ctx)) })
	call("rw.RHoldCount", func() error { return e1(rw.RHoldCount(ctx)) })
	call("rw.RemainingLease", func() error { return e1(rw.RemainingLease(ctx)) })
	call("rw.Inspect", func() error { return e1(rw.Inspect(ctx)) })
	call("rw.Do", func() error { return e1(rw.Do(ctx)) })
	s := c.Semaphore(name)
	call("sem.Acquire", func() error { return e1(s.Acquire(ctx)) })
	call("sem.AcquireFor", func() error { return e1(s.AcquireFor(ctx, time.Second)) })
	call("sem.TryAcquire", func() error { return e2(s.TryAcquire(ctx, 0, 0)) })
	call("sem.Release", func() error { return s.Release(ctx) })
	call("sem.HoldCount", func() error { return e1(s.HoldCount(ctx)) })
	call("sem.ForceRelease", func() error { return e1(s.ForceRelease(ctx)) })
	call("sem.TrySetPermits", func() error { return e1(s.TrySetPermits(ctx, 1)) })
	call("sem.AddPermits", func() error { return s.AddPermits(ctx, 1) })
	call("sem.Available", func() error { return e1(s.Available(ctx)) })
	call("sem.Inspect", func() error { return e1(s.Inspect(ctx)) })
	call("sem.AcquirePermit", func() error { return e1(s.AcquirePermit(ctx, time.Second)) })
	call("sem.TryAcquirePermit", func() error { return e2(s.TryAcquirePermit(ctx, 0, time.Second)) })
	call("sem.ReleasePermit", func() error { return s.ReleasePermit(ctx, "AAAAAAAAAAAAAAAAAAAAAAAAAA") })
	call("sem.ExtendPermit", func() error { return s.ExtendPermit(ctx, "AAAAAAAAAAAAAAAAAAAAAAAAAA", time.Second) })
	d := c.CountDownLatch(name)
	call("latch.TrySetCount", func() error { return e1(d.TrySetCount(ctx, 1)) })
	call("latch.Count", func() error { return e1(d.Count(ctx)) })
	call("latch.CountDown", func() error { return d.CountDown(ctx) })
	call("latch.Await", func() error { return d.Await(ctx) })
	call("latch.Inspect", func() error { return e1(d.Inspect(ctx)) })
	call("client.Inspect", func() error { return e1(c.Inspect(ctx, name)) })
	call("client.Locks", func() error {
		for _, err := range c.Locks(ctx, "*") {
			if err != nil {
				return err
			}
		}
		return errors.New("Locks yielded no error")
	})
	ml := rlock.NewMultiLock(c.Mutex(name), c.Mutex(name+":2"))
	call("multi.Lock", func() error { return e1(ml.Lock(ctx)) })
	call("multi.LockFor", func() error { return e1(ml.LockFor(ctx, time.Second)) })
	call("multi.TryLock", func() error { return e2(ml.TryLock(ctx, 0, 0)) })
	call("multi.Unlock", func() error { return ml.Unlock(ctx) })
	return out
}

type errPanic struct{ p any }

func (e errPanic) Error() string { return "panic: " + fmtAny(e.p) }

func fmtAny(v any) string { return fmt.Sprint(v) }

// TestLifecycleEveryCallAfterClose: every method of every kind, on a
// closed Client, fails with ErrClosed and never panics.
func TestLifecycleEveryCallAfterClose(t *testing.T) {
	c, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	for what, err := range everyCall(c, redistest.LockName(t), t.Context()) {
		assert.ErrorIs(t, err, rlock.ErrClosed, what)
	}
}

// TestLifecycleEveryCallNilHandles: nil and zero Clients answer
// ErrNilClient everywhere, a nil ctx ErrNilContext, an empty name
// ErrInvalidName; never a panic.
func TestLifecycleEveryCallBadInput(t *testing.T) {
	var nilC *rlock.Client
	for what, err := range everyCall(nilC, "x", t.Context()) {
		assert.ErrorIs(t, err, rlock.ErrNilClient, "nil client: "+what)
	}
	var zero rlock.Client
	for what, err := range everyCall(&zero, "x", t.Context()) {
		assert.ErrorIs(t, err, rlock.ErrNilClient, "zero client: "+what)
	}
	c := sharedClient(t)
	for what, err := range everyCall(c, "x", nil) {
		if what == "multi.Lock" || what == "multi.LockFor" || what == "multi.TryLock" || what == "multi.Unlock" {
			assert.ErrorIs(t, err, rlock.ErrNilContext, "nil ctx: "+what)
			continue
		}
		assert.ErrorIs(t, err, rlock.ErrNilContext, "nil ctx: "+what)
	}
	for what, err := range everyCall(c, "", t.Context()) {
		if what == "client.Locks" {
			continue // "" names no lock there: it is a glob
		}
		assert.ErrorIs(t, err, rlock.ErrInvalidName, "empty name: "+what)
	}
}

// TestLifecycleUnlockWithAnotherLocksContext: an Unlock given the
// context of another lock, kind or Client leaves ErrNotHeld and takes
// nothing from the real hold.
func TestLifecycleUnlockWithAnotherLocksContext(t *testing.T) {
	c, c2 := sharedClient(t), sharedClient(t)
	ctx := t.Context()
	name := redistest.LockName(t)

	mu := c.Mutex(name)
	mctx, err := mu.Lock(ctx)
	require.NoError(t, err)
	rw := c.RWMutex(name)
	wctx, err := rw.Lock(ctx)
	require.NoError(t, err)
	rctx, err := c.RWMutex(name + ":r").RLock(ctx)
	require.NoError(t, err)
	sem := c.Semaphore(name)
	_, err = sem.TrySetPermits(ctx, 2)
	require.NoError(t, err)
	sctx, err := sem.Acquire(ctx)
	require.NoError(t, err)
	fm := c.FairMutex(name)
	fctx, err := fm.Lock(ctx)
	require.NoError(t, err)

	for what, err := range map[string]error{
		"other mutex, mutex ctx":        c.Mutex(name + ":x").Unlock(mctx),
		"same name, other Client":       c2.Mutex(name).Unlock(mctx),
		"fair, mutex ctx":               fm.Unlock(mctx),
		"mutex, fair ctx":               mu.Unlock(fctx),
		"rw RUnlock, write ctx":         rw.RUnlock(wctx),
		"rw Unlock, mutex ctx":          rw.Unlock(mctx),
		"rw Unlock, other rw read ctx":  rw.Unlock(rctx),
		"rw RUnlock, other rw read ctx": rw.RUnlock(rctx),
		"sem Release, mutex ctx":        sem.Release(mctx),
		"mutex, sem ctx":                mu.Unlock(sctx),
		"grouped, mutex ctx":            c.GroupedMutex("g", name).Unlock(mctx),
		"multilock, mutex ctx":          rlock.NewMultiLock(c.Mutex(name+":m1"), c.Mutex(name+":m2")).Unlock(mctx),
	} {
		assert.ErrorIs(t, err, rlock.ErrNotHeld, what)
	}
	for what, lctx := range map[string]context.Context{"mutex": mctx, "rw": wctx, "rw read": rctx, "sem": sctx, "fair": fctx} {
		assert.NoError(t, lctx.Err(), what+" still held")
	}
	n, err := mu.HoldCount(mctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = rw.HoldCount(wctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = sem.HoldCount(sctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = fm.HoldCount(fctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	require.NoError(t, mu.Unlock(mctx))
	require.NoError(t, rw.Unlock(wctx))
	require.NoError(t, c.RWMutex(name+":r").RUnlock(rctx))
	require.NoError(t, sem.Release(sctx))
	require.NoError(t, fm.Unlock(fctx))
}

// TestLifecycleHooksOnGiveUpEveryKind: a waiter of each kind that
// gives up (cancel, deadline, TryLock's wait) reports one AcquireWait and
// one AcquireEnd with the right outcome, and the hooks balance.
func TestLifecycleHooksOnGiveUpEveryKind(t *testing.T) {
	rec := &hooktest.Recorder{}
	c := sharedClient(t, rlock.WithHooks(rec))
	holder := sharedClient(t)
	ctx := t.Context()
	name := redistest.LockName(t)

	type kindCase struct {
		name    string
		hold    func() (func(), error)
		acquire func(ctx context.Context, wait time.Duration) (bool, error)
	}
	lockWait := func(lock func(context.Context) (context.Context, error), try func(context.Context, time.Duration, time.Duration) (context.Context, bool, error)) func(context.Context, time.Duration) (bool, error) {
		return func(ctx context.Context, wait time.Duration) (bool, error) {
			if wait < 0 {
				_, err := lock(ctx)
				return err == nil, err
			}
			_, ok, err := try(ctx, wait, 0)
			return ok, err
		}
	}
	mu, hmu := c.Mutex(name), holder.Mutex(name)
	fm, hfm := c.FairMutex(name), holder.FairMutex(name)
	rw, hrw := c.RWMutex(name), holder.RWMutex(name)
	rw2, hrw2 := c.RWMutex(name+":2"), holder.RWMutex(name+":2")
	sem, hsem := c.Semaphore(name), holder.Semaphore(name)
	_, err := sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	cases := []kindCase{
		{"mutex", func() (func(), error) {
			l, err := hmu.Lock(ctx)
			return func() { require.NoError(t, hmu.Unlock(l)) }, err
		}, lockWait(mu.Lock, mu.TryLock)},
		{"fair", func() (func(), error) {
			l, err := hfm.Lock(ctx)
			return func() { require.NoError(t, hfm.Unlock(l)) }, err
		}, lockWait(fm.Lock, fm.TryLock)},
		{"rw write", func() (func(), error) {
			l, err := hrw.RLock(ctx)
			return func() { require.NoError(t, hrw.RUnlock(l)) }, err
		}, lockWait(rw.Lock, rw.TryLock)},
		{"rw read", func() (func(), error) {
			l, err := hrw2.Lock(ctx)
			return func() { require.NoError(t, hrw2.Unlock(l)) }, err
		}, lockWait(rw2.RLock, rw2.TryRLock)},
		{"semaphore", func() (func(), error) {
			l, err := hsem.Acquire(ctx)
			return func() { require.NoError(t, hsem.Release(l)) }, err
		}, lockWait(sem.Acquire, sem.TryAcquire)},
	}
	for _, k := range cases {
		release, err := k.hold()
		require.NoError(t, err, k.name)
		before := rec.Snapshot()

		ok, err := k.acquire(ctx, 100*time.Millisecond)
		assert.NoError(t, err, k.name+" try")
		assert.False(t, ok, k.name+" try")

		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = k.acquire(dctx, -1)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, k.name+" deadline")

		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := k.acquire(cctx, -1); done <- err }()
		rec.WaitFor(t, k.name+" waits", func(e hooktest.Events) bool { return e.Waits == before.Waits+3 })
		cancel()
		assert.ErrorIs(t, receive(t, done, k.name+" cancel"), context.Canceled, k.name+" cancel")

		s := rec.Snapshot()
		require.Len(t, s.Acquires, len(before.Acquires)+3, k.name)
		got := s.Acquires[len(before.Acquires):]
		want := []rlock.Outcome{rlock.OutcomeTimeout, rlock.OutcomeDeadline, rlock.OutcomeCanceled}
		for i, a := range got {
			assert.Equal(t, want[i], a.Outcome, k.name)
			assert.True(t, a.Waited, k.name+" %s waited", a.Outcome)
			assert.Zero(t, a.Token, k.name)
		}
		assert.Equal(t, len(before.Starts), len(s.Starts), k.name+": no hold began")
		release()
		// The lock is free for this Client now, at once.
		ok, err = k.acquire(ctx, 0)
		assert.NoError(t, err, k.name+" after")
		assert.True(t, ok, k.name+" free after the give-ups")
	}
	require.NoError(t, c.Close()) // ends the last holds
	rec.Balanced(t)
}

// TestLifecycleMultiLockShortTryBalancesHooks: a MultiLock try that
// takes one part and falls short gives that part back, and its hold, if
// one began, ends once.
func TestLifecycleMultiLockShortTryBalancesHooks(t *testing.T) {
	rec := &hooktest.Recorder{}
	a, b := sharedClient(t, rlock.WithHooks(rec)), sharedClient(t, rlock.WithHooks(rec))
	other := sharedClient(t)
	ctx := t.Context()
	name := redistest.LockName(t)
	held, err := other.Mutex(name + ":b").Lock(ctx)
	require.NoError(t, err)
	ml := rlock.NewMultiLock(a.Mutex(name+":a"), b.Mutex(name+":b"))
	_, ok, err := ml.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = ml.TryLock(ctx, 300*time.Millisecond, 0)
	require.NoError(t, err)
	require.False(t, ok)
	locked, err := a.Mutex(name + ":a").IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the part taken was given back")
	rec.Balanced(t)
	require.NoError(t, other.Mutex(name+":b").Unlock(held))

	lctx, err := ml.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(lctx))
	assert.ErrorIs(t, ml.Unlock(lctx), rlock.ErrNotHeld)
	s := rec.Balanced(t)
	for _, e := range s.Ends {
		assert.NotEqual(t, rlock.EndClosed, e.Reason)
	}
}

// TestLifecycleConcurrentClose: every Close call, concurrent ones
// included, returns only once the holds are ended (a second Close
// returned at once while the first was still at work).
func TestLifecycleConcurrentClose(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	name := redistest.LockName(t)
	early := 0
	for i := range 30 {
		c, err := rlock.New(rc)
		require.NoError(t, err)
		held, err := c.Mutex(fmt.Sprint(name, i)).LockFor(t.Context(), time.Second)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, c.Close())
				mu.Lock()
				if held.Err() == nil {
					early++
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	assert.Zero(t, early, "Close calls that returned before the holds they end were ended")
}

// TestLifecycleBadDurationsEveryKind: a lease below MinLease and a
// negative wait are refused with ErrInvalidDuration by every kind, before
// anything is taken.
func TestLifecycleBadDurationsEveryKind(t *testing.T) {
	c := sharedClient(t)
	ctx := t.Context()
	name := redistest.LockName(t)
	mu, fm, rw, sem := c.Mutex(name), c.FairMutex(name), c.RWMutex(name), c.Semaphore(name)
	_, err := sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	ml := rlock.NewMultiLock(mu, c.Mutex(name+":2"))
	e1 := func(_ any, err error) error { return err }
	e2 := func(_, _ any, err error) error { return err }
	for what, err := range map[string]error{
		"mutex LockFor 0":            e1(mu.LockFor(ctx, 0)),
		"mutex LockFor 1ns":          e1(mu.LockFor(ctx, 1)),
		"mutex TryLock -1":           e2(mu.TryLock(ctx, -1, 0)),
		"mutex TryLock lease 1ms":    e2(mu.TryLock(ctx, 0, time.Millisecond)),
		"fair LockFor -1s":           e1(fm.LockFor(ctx, -time.Second)),
		"fair TryLock -1":            e2(fm.TryLock(ctx, -1, 0)),
		"rw RLockFor 0":              e1(rw.RLockFor(ctx, 0)),
		"rw LockFor 0":               e1(rw.LockFor(ctx, 0)),
		"rw TryRLock -1":             e2(rw.TryRLock(ctx, -1, 0)),
		"rw TryLock lease 1ms":       e2(rw.TryLock(ctx, 0, time.Millisecond)),
		"sem AcquireFor 0":           e1(sem.AcquireFor(ctx, 0)),
		"sem TryAcquire -1":          e2(sem.TryAcquire(ctx, -1, 0)),
		"sem AcquirePermit 0":        e1(sem.AcquirePermit(ctx, 0)),
		"sem TryAcquirePermit -1":    e2(sem.TryAcquirePermit(ctx, -1, time.Second)),
		"sem TryAcquirePermit lease": e2(sem.TryAcquirePermit(ctx, 0, -time.Second)),
		"multi LockFor 0":            e1(ml.LockFor(ctx, 0)),
		"multi TryLock -1":           e2(ml.TryLock(ctx, -1, 0)),
	} {
		assert.ErrorIs(t, err, rlock.ErrInvalidDuration, what)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, what)
	}
	st, err := c.Inspect(ctx, name)
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	n, err := sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "no permit taken")
	for _, l := range []interface {
		IsLocked(context.Context) (bool, error)
	}{mu, fm, rw} {
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)
	}
}
