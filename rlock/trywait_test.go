package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// tryVerb takes a primitive for up to wait, as a new owner: its lock
// context and whether it took it; free lets go of what it took. excludes
// is the verb whose hold makes try wait ("": try itself).
type tryVerb struct {
	name     string
	try      func(c *rlock.Client, n string, ctx context.Context, wait time.Duration) (context.Context, bool, error)
	free     func(c *rlock.Client, n string, ctx context.Context) error
	excludes string
}

// tryVerbNamed returns the verb of tryVerbs named name.
func tryVerbNamed(name string) tryVerb {
	for _, v := range tryVerbs {
		if v.name == name {
			return v
		}
	}
	panic("no try verb " + name)
}

var tryVerbs = []tryVerb{
	{"Mutex.TryLock",
		func(c *rlock.Client, n string, ctx context.Context, wait time.Duration) (context.Context, bool, error) {
			return c.Mutex(n).TryLock(ctx, wait, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Mutex(n).Unlock(ctx) }, ""},
	{"FairMutex.TryLock",
		func(c *rlock.Client, n string, ctx context.Context, wait time.Duration) (context.Context, bool, error) {
			return c.FairMutex(n).TryLock(ctx, wait, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.FairMutex(n).Unlock(ctx) }, ""},
	{"RWMutex.TryLock",
		func(c *rlock.Client, n string, ctx context.Context, wait time.Duration) (context.Context, bool, error) {
			return c.RWMutex(n).TryLock(ctx, wait, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).Unlock(ctx) }, ""},
	{"RWMutex.TryRLock",
		func(c *rlock.Client, n string, ctx context.Context, wait time.Duration) (context.Context, bool, error) {
			return c.RWMutex(n).TryRLock(ctx, wait, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).RUnlock(ctx) }, "RWMutex.TryLock"},
	{"Semaphore.TryAcquire",
		func(c *rlock.Client, n string, ctx context.Context, wait time.Duration) (context.Context, bool, error) {
			if _, err := c.Semaphore(n).TrySetPermits(ctx, 1); err != nil {
				return ctx, false, err
			}
			return c.Semaphore(n).TryAcquire(ctx, wait, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Semaphore(n).Release(ctx) }, ""},
}

// TestTryWaitOnFreeContendedLockTakesIt: a Client whose waiter just gave
// up a lock another Client held still knows the lock as contended (its
// subscription lingers), and a new owner's try with a positive wait goes
// straight to the wait, which subscribes first. On the lock, free by then,
// a try with a wait too short for the subscription (1 ns, 1 µs) takes it,
// as a try with wait 0 does: no wait tries less than none. (It returned
// false without asking Redis: its wait ran out in the subscribe, and the
// attempt it skipped was never made.)
func TestTryWaitOnFreeContendedLockTakesIt(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	holder, c := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	for _, v := range tryVerbs {
		for _, wait := range []time.Duration{time.Nanosecond, time.Microsecond} {
			t.Run(v.name+"/"+wait.String(), func(t *testing.T) {
				name := redistest.LockName(t)
				block := v
				if v.excludes != "" {
					block = tryVerbNamed(v.excludes)
				}
				hctx, ok, err := block.try(holder, name, t.Context(), 0)
				require.NoError(t, err)
				require.True(t, ok, "the holder takes the free primitive")
				ctx, cancel := context.WithCancel(t.Context())
				got := make(chan error, 1)
				go func() {
					_, _, err := v.try(c, name, ctx, time.Minute)
					got <- err
				}()
				redistest.Eventually(t, "the waiter subscribed", func(ctx context.Context) error {
					return redistest.Exactly("waiting Clients", waiting(ctx, raw, name), 1)
				})
				cancel()
				require.ErrorIs(t, receive(t, got, v.name), context.Canceled)
				require.NoError(t, block.free(holder, name, hctx))

				lctx, ok, err := v.try(c, name, t.Context(), wait)
				require.NoError(t, err)
				require.True(t, ok, "a try with a wait of %v on the free primitive takes it", wait)
				assert.NoError(t, v.free(c, name, lctx))
			})
		}
	}
}
