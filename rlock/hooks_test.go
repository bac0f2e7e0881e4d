package rlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

func TestHooksReportUncontendedReentryAndRelease(t *testing.T) {
	rec := &hooktest.Recorder{}
	mu := sharedClient(t, rlock.WithHooks(rec)).Mutex(redistest.LockName(t))

	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	ctx, err = mu.Lock(ctx)
	require.NoError(t, err)
	token, ok := mu.FencingToken(ctx)
	require.True(t, ok)
	require.NoError(t, mu.Unlock(ctx))
	require.NoError(t, mu.Unlock(ctx))
	require.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNotHeld)

	s := rec.Snapshot()
	assert.Equal(t, []string{
		"AcquireStart", "HoldStart", "AcquireEnd", // the first level begins the hold
		"AcquireStart", "AcquireEnd", // a re-entry begins none
		"ReleaseStart", "ReleaseEnd",
		"ReleaseStart", "HoldEnd", "ReleaseEnd", // the final level ends it
		"ReleaseStart", "ReleaseEnd", // not held
	}, s.Calls, "each event once, in order, each end given its start's context")

	ref := rlock.LockRef{Kind: "mutex", Name: mu.Name()}
	require.Len(t, s.Acquires, 2)
	first, again := s.Acquires[0], s.Acquires[1]
	assert.Equal(t, ref, first.LockRef)
	assert.Equal(t, rlock.OutcomeAcquired, first.Outcome)
	assert.Equal(t, 1, first.Attempts)
	assert.False(t, first.Waited)
	assert.Zero(t, first.Wait)
	assert.False(t, first.Reentry)
	assert.Equal(t, 1, first.Count)
	assert.Equal(t, token, first.Token)
	assert.Positive(t, first.Duration)
	assert.True(t, again.Reentry)
	assert.Equal(t, 2, again.Count)
	assert.Equal(t, token, again.Token, "a re-entry keeps the token")

	require.Len(t, s.Releases, 3)
	assert.Equal(t, rlock.OutcomeStillHeld, s.Releases[0].Outcome)
	assert.Equal(t, 1, s.Releases[0].Left)
	assert.Equal(t, token, s.Releases[0].Token)
	assert.Equal(t, rlock.OutcomeFreed, s.Releases[1].Outcome)
	assert.Equal(t, 0, s.Releases[1].Left)
	assert.Equal(t, rlock.OutcomeNotHeld, s.Releases[2].Outcome)
	assert.ErrorIs(t, s.Releases[2].Err, rlock.ErrNotHeld)

	require.Len(t, s.Starts, 1)
	require.Len(t, s.Ends, 1)
	assert.Equal(t, rlock.HoldStart{LockRef: ref, Token: token}, s.Starts[0])
	assert.Equal(t, rlock.EndReleased, s.Ends[0].Reason)
	assert.Equal(t, token, s.Ends[0].Token)
	assert.Positive(t, s.Ends[0].Held)
}

// TestHooksReportWaits covers the acquires that wait: one that gets the lock
// when the holder lets go, one whose wait runs out, one cancelled, and one
// that meets Close.
func TestHooksReportWaits(t *testing.T) {
	rec := &hooktest.Recorder{}
	c := sharedClient(t, rlock.WithHooks(rec))
	mu := c.Mutex(redistest.LockName(t))
	raw := redistest.Shared(t).Client(t)
	t.Cleanup(func() { // Close leaves the last hold to its lease
		raw.Do(context.Background(), raw.B().Del().Key(lockKeys(mu.Name()).Hash).Build())
	})
	held, err := mu.Lock(t.Context())
	require.NoError(t, err)

	// Waits until released.
	got := make(chan error, 1)
	go func() {
		ctx, err := mu.Lock(t.Context())
		if err == nil {
			err = mu.Unlock(ctx)
		}
		got <- err
	}()
	rec.WaitFor(t, "the waiter reports its wait", func(s hooktest.Events) bool { return s.Waits == 1 })
	require.NoError(t, mu.Unlock(held))
	require.NoError(t, <-got)
	s := rec.WaitFor(t, "the waiter's acquire ends", func(s hooktest.Events) bool { return len(s.Acquires) == 2 })
	waited := s.Acquires[1]
	assert.Equal(t, rlock.OutcomeAcquired, waited.Outcome)
	assert.True(t, waited.Waited)
	assert.Positive(t, waited.Wait)
	assert.LessOrEqual(t, waited.Wait, waited.Duration)
	// The attempt made once subscribed may already find the lock free.
	assert.Equal(t, waited.Wakeups+2, waited.Attempts, "the first attempt, the one once subscribed, one per wake-up")

	held, err = mu.Lock(t.Context())
	require.NoError(t, err)

	// A wait that runs out.
	_, ok, err := mu.TryLock(t.Context(), 50*time.Millisecond, 0)
	require.NoError(t, err)
	require.False(t, ok)

	// A wait cancelled once it began.
	cctx, cancel := context.WithCancel(t.Context())
	go func() {
		_, err := mu.Lock(cctx)
		got <- err
	}()
	rec.WaitFor(t, "the third waiter waits", func(s hooktest.Events) bool { return s.Waits == 3 })
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)

	// A wait past the caller's deadline, which leaves the first attempt
	// time to be refused even on a loaded machine: the call waits.
	dctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err = mu.Lock(dctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	s = rec.Snapshot()
	outcomes := map[rlock.Outcome]int{}
	for _, a := range s.Acquires[3:] {
		outcomes[a.Outcome]++
		assert.True(t, a.Waited, "%s: waited", a.Outcome)
		assert.Zero(t, a.Token, "%s: no token", a.Outcome)
	}
	assert.Equal(t, map[rlock.Outcome]int{rlock.OutcomeTimeout: 1, rlock.OutcomeCanceled: 1, rlock.OutcomeDeadline: 1}, outcomes)
	assert.Equal(t, 4, s.Waits, "AcquireWait once per waiting call")

	// Close ends the waiter and the hold.
	go func() {
		_, err := mu.Lock(t.Context())
		got <- err
	}()
	rec.WaitFor(t, "the last waiter waits", func(s hooktest.Events) bool { return s.Waits == 5 })
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-got, rlock.ErrClosed)
	s = rec.Snapshot()
	assert.Equal(t, rlock.OutcomeClosed, s.Acquires[len(s.Acquires)-1].Outcome)
	assert.Equal(t, rlock.EndClosed, s.Ends[len(s.Ends)-1].Reason)
	require.ErrorIs(t, held.Err(), context.Canceled)
	assert.Len(t, s.Starts, len(s.Ends), "every hold that began ended")
	rec.Balanced(t)
}

// TestHooksReportLosses ends holds in each way but Close and the release:
// renewal finds it gone, a fixed lease runs out, ForceUnlock.
func TestHooksReportLosses(t *testing.T) {
	rec := &hooktest.Recorder{}
	node := redistest.Shared(t)
	c := newRlock(t, node.Client(t), rlock.WithHooks(rec), rlock.WithLeaseTime(600*time.Millisecond))
	raw := node.Client(t)

	gone := c.Mutex(redistest.LockName(t) + ":gone")
	ctx, err := gone.Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(lockKeys(gone.Name()).Hash).Build()).Error())
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	s := rec.WaitFor(t, "the loss is reported", func(s hooktest.Events) bool { return len(s.Ends) == 1 })
	assert.Equal(t, rlock.EndGone, s.Ends[0].Reason)
	lost := 0
	for _, r := range s.Rounds {
		lost += r.Lost
		assert.Positive(t, r.Calls)
	}
	assert.Equal(t, 1, lost, "one round found the hold gone")

	fixed := c.Mutex(redistest.LockName(t) + ":fixed")
	ctx, err = fixed.LockFor(t.Context(), 50*time.Millisecond)
	require.NoError(t, err)
	<-ctx.Done()
	s = rec.WaitFor(t, "the lease's end is reported", func(s hooktest.Events) bool { return len(s.Ends) == 2 })
	assert.Equal(t, rlock.EndLeaseEnded, s.Ends[1].Reason)

	forced := c.Mutex(redistest.LockName(t) + ":forced")
	ctx, err = forced.Lock(t.Context())
	require.NoError(t, err)
	ok, err := forced.ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
	require.Error(t, ctx.Err())
	s = rec.Snapshot()
	require.Len(t, s.Ends, 3)
	assert.Equal(t, rlock.EndForceUnlocked, s.Ends[2].Reason)
	for _, e := range s.Ends {
		assert.ErrorIs(t, e.Cause, rlock.ErrLockLost)
		assert.Positive(t, e.Token)
	}

	// Renewals of a live hold are counted.
	kept := c.Mutex(redistest.LockName(t) + ":kept")
	ctx, err = kept.Lock(t.Context())
	require.NoError(t, err)
	rec.WaitFor(t, "a round renews the live hold", func(s hooktest.Events) bool {
		for _, r := range s.Rounds {
			if r.Renewed > 0 {
				return true
			}
		}
		return false
	})
	require.NoError(t, kept.Unlock(ctx))
}

func TestWithHooksRejectsNil(t *testing.T) {
	_, err := rlock.New(redistest.Shared(t).Client(t), rlock.WithHooks(nil))
	require.ErrorIs(t, err, rlock.ErrInvalidArgument)
}

// TestNopHooksEmbeds shows a partial Hooks: embed NopHooks, override some.
func TestNopHooksEmbeds(t *testing.T) {
	var n countStarts
	mu := sharedClient(t, rlock.WithHooks(&n)).Mutex(redistest.LockName(t))
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(ctx))
	n.mu.Lock()
	defer n.mu.Unlock()
	assert.Equal(t, 1, n.n)
}

type countStarts struct {
	rlock.NopHooks
	mu sync.Mutex
	n  int
}

func (c *countStarts) HoldStart(rlock.HoldStart) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}
