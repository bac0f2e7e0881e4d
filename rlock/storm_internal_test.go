package rlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestCancelledStormLeavesNothing runs many Lock calls on a few locks with
// contexts cancelled at random moments, then closes the Client: no hold may
// stay registered with the watchdog, no waiter subscribed, no goroutine
// running (TestMain checks the last).
func TestCancelledStormLeavesNothing(t *testing.T) {
	c, err := New(redistest.Shared(t).Client(t), WithLeaseTime(time.Second))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			name := fmt.Sprintf("%s:%d", t.Name(), i%5)
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(40))*time.Millisecond)
			defer cancel()
			mu := c.Mutex(name)
			lctx, err := mu.Lock(ctx)
			if err != nil {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
			time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // workload pacing: a hold of a few ms
			assert.NoError(t, mu.Unlock(lctx))
		})
	}
	wg.Wait()

	assert.Zero(t, c.dog.Len(), "holds left registered with the watchdog")
	assert.Zero(t, c.turns.len(), "owner turns left in the Client")
	assert.Eventually(t, func() bool { return c.subs.Channels() == 0 }, 5*time.Second, 10*time.Millisecond,
		"channels left subscribed")
	require.NoError(t, c.Close())
}
