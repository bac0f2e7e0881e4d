package watchdog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/watchdog"
)

// TestRoundStats: Config.Round hears of every round, with the holds it
// renewed and those it found gone, matching the holds' own callbacks.
func TestRoundStats(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	const lease = 600 * time.Millisecond
	var mu sync.Mutex
	var rounds []watchdog.RoundStats
	w, err := watchdog.New(rc, watchdog.Config{Lease: lease, Round: func(s watchdog.RoundStats) {
		mu.Lock()
		defer mu.Unlock()
		rounds = append(rounds, s)
	}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, w.Close()) })
	rec := newRecorder()
	holds := rec.holds(t, 5)
	lock(t, rc, time.Minute, holds...)
	require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(holds[0].Key).Build()).Error())
	addAll(t, w, holds...)

	require.Eventually(t, func() bool { return rec.renewals() >= 8 }, 10*time.Second, 10*time.Millisecond, "two rounds of the live holds")
	require.NoError(t, w.Close())
	mu.Lock()
	defer mu.Unlock()
	var renewed, lost int
	for _, r := range rounds {
		renewed += r.Renewed
		lost += r.Lost
		assert.Positive(t, r.Calls, "a round reported is a round sent")
		assert.LessOrEqual(t, r.Failed+r.Renewed+r.Lost, len(holds), "each hold once a round") // a loaded machine may time a round out
		assert.Positive(t, r.Duration)
	}
	// Close may stop a round's callbacks after the round was reported.
	assert.GreaterOrEqual(t, renewed, rec.renewals(), "every renewal a callback heard of is counted")
	assert.LessOrEqual(t, renewed, rec.renewals()+len(holds)-1, "at most one round's callbacks cut short")
	assert.Equal(t, 1, lost, "the deleted hold")
}
