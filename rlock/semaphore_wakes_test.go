package rlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestSemaphoreHoldCountAfterLeaseEnded: an owner's permit taken
// with a fixed lease that ran out is free again (Available counts it, and
// another owner takes it), so the owner holds none: HoldCount must say 0,
// as RWMutex's RHoldCount and a Mutex's HoldCount do for a hold whose
// lease ran out. Reporting 1 has two owners "hold" the one permit left.
func TestSemaphoreHoldCountAfterLeaseEnded(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	sem := c.Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	// A holder that keeps renewing its permit keeps the semaphore's hash.
	keeper := newRlock(t, s.Client(t)).Semaphore(name)
	kctx, err := keeper.Acquire(t.Context())
	require.NoError(t, err)
	defer func() { require.NoError(t, keeper.Release(kctx)) }()

	pctx, err := sem.AcquireFor(t.Context(), 300*time.Millisecond)
	require.NoError(t, err)
	<-pctx.Done() // the fixed lease ran out
	time.Sleep(200 * time.Millisecond)

	n, err := sem.Available(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n, "the permit came back (the keeper holds the other)")
	held, err := sem.HoldCount(pctx)
	require.NoError(t, err)
	assert.Equal(t, 0, held, "HoldCount of an owner whose permit's lease ran out (Available says it is free)")

	other := newRlock(t, s.Client(t)).Semaphore(name)
	octx, ok, err := other.TryAcquire(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "another owner takes the permit that came back")
	held, err = sem.HoldCount(pctx)
	require.NoError(t, err)
	assert.Equal(t, 0, held, "HoldCount of the first owner while another holds the only permit")
	require.NoError(t, other.Release(octx))
}

// slowScripts delays every script call on one key by delay before sending
// it, as a slow link would: the waiter's attempt is under way meanwhile.
type slowScripts struct {
	rueidis.Client
	key   string
	delay time.Duration
}

func (c *slowScripts) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[3] == c.key {
		time.Sleep(c.delay)
	}
	return c.Client.Do(ctx, cmd)
}

// TestSemaphoreTwoReleasesWakeTwoWaiters: two permits are held, and
// two waiters of one Client wait. The holders release one permit each, one
// right after the other, while the waiter the first release woke is still
// asking (its request takes 300 ms on a slow link). Both waiters must get a
// permit promptly: the second release's wake-up must not be swallowed by
// the waiter that the first woke, leaving the other asleep until the
// earliest holder's lease would have run out (up to 30 s) beside a free
// permit.
func TestSemaphoreTwoReleasesWakeTwoWaiters(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	hash := keys.NewSemaphore(rlock.DefaultKeyPrefix, name).Hash
	holders := newRlock(t, s.Client(t)).Semaphore(name)
	_, err := holders.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	h1, err := holders.Acquire(t.Context())
	require.NoError(t, err)
	h2, err := holders.Acquire(t.Context())
	require.NoError(t, err)

	waiters := newRlock(t, &slowScripts{Client: s.Client(t), key: hash, delay: 300 * time.Millisecond}).Semaphore(name)
	got := make(chan time.Time, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
			defer cancel()
			pctx, err := waiters.Acquire(ctx)
			if err != nil {
				return
			}
			got <- time.Now()
			<-ctx.Done() // keep the permit until the test ends
			assert.NoError(t, waiters.Release(pctx))
		}()
	}
	time.Sleep(2 * time.Second) // both wait: refused, subscribed, asleep

	released := time.Now()
	require.NoError(t, holders.Release(h1))
	require.NoError(t, holders.Release(h2))
	for i := range 2 {
		select {
		case at := <-got:
			t.Logf("waiter %d got a permit %v after the releases", i+1, at.Sub(released))
		case <-time.After(5 * time.Second):
			free, err := holders.Available(t.Context())
			require.NoError(t, err)
			t.Errorf("waiter %d: no permit 5 s after both permits came back (available now: %d)", i+1, free)
		}
	}
	wg.Wait()
}
