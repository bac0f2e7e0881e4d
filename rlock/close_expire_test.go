package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestCloseReportsEveryExpiredHoldEnd: Close returns once its goroutines
// have exited, and every hold of the Client has ended by then. A hold
// whose local deadline passed while Redis was paused, with a renewal
// round in flight, must have been reported ended (HoldEnd) by the time
// Close returns too: hooks that hear of a hold after its Client closed
// (an OpenTelemetry meter shut down with it) see unbalanced holds.
func TestCloseReportsEveryExpiredHoldEnd(t *testing.T) {
	// Rounds every lease/3, each renewing the holds due in its tick of the
	// watchdog's wheel (lease/24): on a loaded machine the 20 Locks span
	// several ticks, and so several rounds, for good. The test waits until
	// the rounds have renewed as many holds as there are: the Locks end
	// within a period, so no hold is renewed twice before every other hold
	// is renewed once.
	const lease = 1500 * time.Millisecond
	const locks = 20
	for round := range 5 {
		node := redistest.New(t, redistest.Config{})
		if !node.Controllable() {
			t.Skip("the Redis at REDIS_ADDR cannot be paused by the test")
		}
		rec := &hooktest.Recorder{}
		c, err := rlock.New(node.Client(t), rlock.WithLeaseTime(lease), rlock.WithHooks(rec), rlock.WithRetryTimeout(200*time.Millisecond))
		require.NoError(t, err)
		var ctxs []context.Context
		for i := range locks {
			lctx, err := c.Mutex(fmt.Sprint(redistest.LockName(t), round, i)).Lock(t.Context())
			require.NoError(t, err)
			ctxs = append(ctxs, lctx)
		}
		rec.WaitFor(t, "every hold renewed", func(s hooktest.Events) bool {
			renewed := 0
			for _, r := range s.Rounds {
				renewed += r.Renewed
			}
			return renewed >= locks
		})
		require.NoError(t, node.Pause(t.Context()))
		receive(t, ctxs[0].Done(), "the end of a hold while Redis is paused")
		require.NoError(t, c.Close())
		snap := rec.Snapshot()
		require.NoError(t, node.Resume(t.Context()))
		for _, lctx := range ctxs {
			assert.Error(t, lctx.Err(), "every lock context is done after Close")
		}
		if !assert.Zero(t, snap.Held, "round %d: holds begun and not reported ended when Close returned (%d starts, %d ends)", round, len(snap.Starts), len(snap.Ends)) {
			return
		}
	}
}
