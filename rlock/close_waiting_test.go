package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestClosedClientLeavesWaitingRecord: a Client closed while its
// waiter is recorded as waiting on a Mutex withdraws from the record (as
// withdraw's doc says: "even after Close woke the waiter: other Clients'
// waiters must not wait out the lease of a place nobody will take"). The
// holder's next Unlock then wakes the other Client's waiter at once,
// rather than addressing its wake-up to the closed Client, which nobody
// receives, and leaving the other waiter asleep until the lease it was
// told of runs out.
func TestClosedClientLeavesWaitingRecord(t *testing.T) {
	const lease = 15 * time.Second
	node := redistest.New(t, redistest.Config{})
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := lockKeys(name)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.LockFor(t.Context(), lease)
	require.NoError(t, err)
	closed := newRlock(t, node.Client(t))
	got := make(chan held, 2)
	lockAndReport(t, 0, closed.Mutex(name), t.Context(), got)
	waitRecorded(t, node, k, 1)
	lockAndReport(t, 1, newRlock(t, node.Client(t)).Mutex(name), t.Context(), got)
	waitRecorded(t, node, k, 2)

	require.NoError(t, closed.Close())
	// The closed Client's waiter withdraws on its way out (a release in a
	// turn of its own, bounded by the retry timeout): give it a moment.
	time.Sleep(500 * time.Millisecond)
	n, err := raw.Do(context.Background(), raw.B().Zcard().Key(k.Queue).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "only the open Client is still recorded as waiting")

	start := time.Now()
	require.NoError(t, holder.Unlock(hctx))
	h := receive(t, got, "the other Client's waiter")
	took := time.Since(start)
	assert.Equal(t, 1, h.i, "the waiter whose Client is open")
	assert.Less(t, took, 2*time.Second, "hand-off took %v with a %v lease: the release woke the closed Client", took, lease)
	require.NoError(t, h.mu.Unlock(h.ctx))
}
