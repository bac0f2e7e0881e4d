package integration

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestHooksWithLostReplies loses the replies of acquires and releases: the
// hooks see each call once with its outcome, and each hold begin and end
// once, whether the resend saved the call or it failed.
func TestHooksWithLostReplies(t *testing.T) {
	const retry = 300 * time.Millisecond
	node := faultNode(t)
	name := redistest.LockName(t)
	loss := &replyLoss{hash: lockKeys(name).Hash}
	hooks := &hooktest.Recorder{}
	c := newRlock(t, loss.client(node.Client(t)), rlock.WithHooks(hooks), rlock.WithRetryTimeout(retry), rlock.WithLeaseTime(watchdogLease))
	mu := c.Mutex(name)

	// Replies lost once: the resends save both calls.
	loss.acquire.Store(1)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	loss.release.Store(1)
	require.NoError(t, mu.Unlock(ctx))
	require.EqualValues(t, 2, loss.lost.Load())

	// Every reply lost: the acquire fails, and no hold began.
	loss.acquire.Store(1)
	loss.down.Store(true)
	_, err = mu.Lock(t.Context())
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	loss.down.Store(false)
	require.Eventually(t, keyGone(t, node.Client(t), lockKeys(name).Hash), watchdogLease+time.Second, 20*time.Millisecond)

	// A release that never reaches Redis: the hold ends as unlock_failed.
	ctx, err = mu.Lock(t.Context())
	require.NoError(t, err)
	loss.down.Store(true)
	require.ErrorIs(t, mu.Unlock(ctx), io.ErrUnexpectedEOF)
	loss.down.Store(false)

	ev := hooks.Balanced(t)
	outcomes := []rlock.Outcome{}
	for _, a := range ev.Acquires {
		outcomes = append(outcomes, a.Outcome)
	}
	assert.Equal(t, []rlock.Outcome{rlock.OutcomeAcquired, rlock.OutcomeError, rlock.OutcomeAcquired}, outcomes)
	assert.ErrorIs(t, ev.Acquires[1].Err, io.ErrUnexpectedEOF)
	require.Len(t, ev.Releases, 2)
	assert.Equal(t, rlock.OutcomeFreed, ev.Releases[0].Outcome, "the resent release freed it")
	assert.Equal(t, rlock.OutcomeError, ev.Releases[1].Outcome)
	require.Len(t, ev.Ends, 2, "two holds began and ended; the failed acquire began none")
	assert.Equal(t, rlock.EndReleased, ev.Ends[0].Reason)
	assert.Equal(t, rlock.EndUnlockFailed, ev.Ends[1].Reason)
}

// TestHooksUnderStorm runs owners whose goroutines share the owner's
// context on two contended locks: they re-enter each other's holds, wait,
// give up mid-wait or mid-request, and unlock; then it closes the Client
// while they run. Every call the hooks saw start ended once, every hold
// that began ended once (Close ends the last ones), and the waits balance.
func TestHooksUnderStorm(t *testing.T) {
	hooks := &hooktest.Recorder{}
	// A lease long enough that no hold is lost on a loaded machine: Close
	// is what ends the owners' holds.
	c, err := rlock.New(redistest.Shared(t).Client(t), rlock.WithHooks(hooks), rlock.WithLeaseTime(10*time.Second))
	require.NoError(t, err)
	base := redistest.LockName(t)
	shared := []string{base + ":a", base + ":b"}
	raw := redistest.Shared(t).Client(t)
	const owners, perOwner = 4, 3
	t.Cleanup(func() { // Close leaves the holds it ended to their lease
		for i := range owners {
			raw.Do(context.Background(), raw.B().Del().Key(lockKeys(fmt.Sprintf("%s:home%d", base, i)).Hash).Build())
		}
		for _, n := range shared {
			raw.Do(context.Background(), raw.B().Del().Key(lockKeys(n).Hash).Build())
		}
	})

	var wg sync.WaitGroup
	for o := range owners {
		// The owner's context: it carries the owner, and lives while the
		// owner holds a lock of its own, until Close.
		octx, err := c.Mutex(fmt.Sprintf("%s:home%d", base, o)).Lock(t.Context())
		require.NoError(t, err)
		mu := c.Mutex(shared[o%len(shared)])
		for range perOwner {
			wg.Go(func() {
				for octx.Err() == nil {
					cctx, cancel := context.WithTimeout(octx, time.Duration(rand.IntN(20))*time.Millisecond)
					lctx, err := mu.Lock(cctx)
					if err == nil {
						time.Sleep(time.Duration(rand.IntN(2)) * time.Millisecond) // holds of varied length
						_ = mu.Unlock(lctx)
					}
					cancel()
				}
			})
		}
	}
	// The storm runs until each kind of event the checks below look for
	// has come, and then meets Close.
	hooks.WaitFor(t, "acquires, re-entries, give-ups and releases", func(e hooktest.Events) bool {
		var acquired, reentries, deadlines int
		for _, a := range e.Acquires {
			switch {
			case a.Reentry:
				reentries++
			case a.Outcome == rlock.OutcomeAcquired:
				acquired++
			case a.Outcome == rlock.OutcomeDeadline:
				deadlines++
			}
		}
		released := 0
		for _, end := range e.Ends {
			if end.Reason == rlock.EndReleased {
				released++
			}
		}
		return acquired >= 10 && reentries >= 3 && deadlines >= 3 && released >= 3
	})
	require.NoError(t, c.Close())
	wg.Wait()

	ev := hooks.Balanced(t)
	outcomes := map[rlock.Outcome]int{}
	reentries := 0
	for _, a := range ev.Acquires {
		outcomes[a.Outcome]++
		if a.Reentry {
			reentries++
		}
	}
	reasons := map[rlock.EndReason]int{}
	for _, e := range ev.Ends {
		reasons[e.Reason]++
	}
	t.Logf("acquire outcomes %v, %d re-entries, holds ended %v", outcomes, reentries, reasons)
	assert.Positive(t, outcomes[rlock.OutcomeAcquired])
	assert.Positive(t, outcomes[rlock.OutcomeDeadline], "some gave up mid-wait or mid-request")
	assert.Positive(t, reentries, "goroutines of one owner re-entered each other's holds")
	assert.GreaterOrEqual(t, reasons[rlock.EndClosed], owners, "Close ended the owners' own holds, and any shared one held then")
	assert.Positive(t, reasons[rlock.EndReleased])
}
