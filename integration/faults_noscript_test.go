package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestFaultScriptFlush empties Redis's script cache between operations, as
// an operator's SCRIPT FLUSH, or a failover to a replica that never ran the
// scripts, would: every EVALSHA that follows meets NOSCRIPT, and rlock's
// scripts must fall back to EVAL (rueidis.Lua does) for acquire, re-entry,
// renewal and release alike.
func TestFaultScriptFlush(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	rec := &hooktest.Recorder{}
	mu := newRlock(t, node.Client(t), rlock.WithLeaseTime(watchdogLease), rlock.WithHooks(rec)).Mutex(redistest.LockName(t))
	flush := func() {
		t.Helper()
		require.NoError(t, raw.Do(t.Context(), raw.B().ScriptFlush().Build()).Error())
	}

	outer, err := mu.Lock(t.Context())
	require.NoError(t, err)
	flush()
	inner, err := mu.Lock(outer)
	require.NoError(t, err, "re-entry after SCRIPT FLUSH")
	assertHoldCount(t, outer, mu, 2)

	flush()
	// Two rounds that renewed the lock: the second ran after the flush.
	rounds := len(rec.Snapshot().Rounds)
	rec.WaitFor(t, "two renewals after the flush", func(e hooktest.Events) bool {
		renewed := 0
		for _, r := range e.Rounds[rounds:] {
			if r.Renewed > 0 {
				renewed++
			}
		}
		return renewed >= 2
	})
	require.NoError(t, outer.Err(), "renewal after SCRIPT FLUSH keeps the lock")
	lease, err := mu.RemainingLease(outer)
	require.NoError(t, err)
	assert.Greater(t, lease, watchdogLease/2, "the watchdog renewed the lease after the flush")

	flush()
	require.NoError(t, mu.Unlock(inner), "Unlock after SCRIPT FLUSH")
	assertHoldCount(t, outer, mu, 1)
	flush()
	require.NoError(t, mu.Unlock(outer), "final Unlock after SCRIPT FLUSH")
	assert.ErrorIs(t, outer.Err(), context.Canceled, "the final Unlock ends the lock context")

	flush()
	again, err := mu.Lock(t.Context())
	require.NoError(t, err, "Lock again after SCRIPT FLUSH")
	require.NoError(t, mu.Unlock(again))
	assert.False(t, keyExists(t, raw, lockKeys(redistest.LockName(t)).Hash), "the lock is free")
	assert.Positive(t, errorReplies(t, raw, "NOSCRIPT"), "the flushes made Redis answer NOSCRIPT")
}
