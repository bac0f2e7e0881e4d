package rlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// waitingVerb is a verb that waits for a primitive another owner holds:
// block takes the primitive so that wait must wait, and free lets it go.
type waitingVerb struct {
	name  string
	block func(c *rlock.Client, n string, ctx context.Context) (context.Context, error)
	wait  func(c *rlock.Client, n string, ctx context.Context) error
	free  func(c *rlock.Client, n string, hctx context.Context) error
}

var waitingVerbs = []waitingVerb{
	{"Mutex.LockFor", prims["Mutex"],
		func(c *rlock.Client, n string, ctx context.Context) error {
			return result(c.Mutex(n).LockFor(ctx, verbLease))
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Mutex(n).Unlock(ctx) }},
	{"FairMutex.LockFor", prims["FairMutex"],
		func(c *rlock.Client, n string, ctx context.Context) error {
			return result(c.FairMutex(n).LockFor(ctx, verbLease))
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.FairMutex(n).Unlock(ctx) }},
	{"RWMutex.LockFor", prims["RWMutex"],
		func(c *rlock.Client, n string, ctx context.Context) error {
			return result(c.RWMutex(n).LockFor(ctx, verbLease))
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return rwFree(c, n, ctx) }},
	{"RWMutex.RLockFor", prims["RWMutex"],
		func(c *rlock.Client, n string, ctx context.Context) error {
			return result(c.RWMutex(n).RLockFor(ctx, verbLease))
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return rwFree(c, n, ctx) }},
	{"Semaphore.AcquireFor", func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		if _, err := c.Semaphore(n).TrySetPermits(ctx, 1); err != nil {
			return ctx, err
		}
		return c.Semaphore(n).Acquire(ctx)
	}, func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Semaphore(n).AcquireFor(ctx, verbLease))
	},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Semaphore(n).Release(ctx) }},
	{"MultiLock.LockFor", prims["MultiLock"],
		func(c *rlock.Client, n string, ctx context.Context) error {
			return result(multi(c, n).LockFor(ctx, verbLease))
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return multi(c, n).Unlock(ctx) }},
}

// TestWaitingVerbsGiveUp: every verb that waits, waiting for a primitive
// another Client holds, gives up cleanly when its context is cancelled
// mid-wait (an error wrapping context.Canceled) and when its Client is
// closed under it (ErrClosed); either way it takes nothing, and the
// primitive, once its holder lets go, can be taken at once by a third
// Client.
func TestWaitingVerbsGiveUp(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	holder, taker := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	for _, v := range waitingVerbs {
		for _, how := range []string{"cancel", "close"} {
			t.Run(v.name+"/"+how, func(t *testing.T) {
				name := redistest.LockName(t)
				hctx, err := v.block(holder, name, t.Context())
				require.NoError(t, err)
				waiter, err := rlock.New(s.Client(t))
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				got := make(chan error, 1)
				go func() { got <- v.wait(waiter, name, ctx) }()
				if strings.HasPrefix(v.name, "MultiLock") {
					time.Sleep(50 * time.Millisecond) // a MultiLock's waiter tries again after random pauses, not on pub/sub: a try or two
				} else {
					redistest.Eventually(t, "the waiter subscribed", func(ctx context.Context) error {
						return redistest.Exactly("waiting Clients", waiting(ctx, raw, name), 1)
					})
				}
				if how == "cancel" {
					cancel()
					assert.ErrorIs(t, receive(t, got, v.name), context.Canceled)
				} else {
					require.NoError(t, waiter.Close())
					assert.ErrorIs(t, receive(t, got, v.name), rlock.ErrClosed)
				}
				require.NoError(t, waiter.Close())
				require.NoError(t, v.free(holder, name, hctx))
				tctx, cancelTaker := context.WithTimeout(t.Context(), redistest.Patience)
				defer cancelTaker()
				assert.NoError(t, v.wait(taker, name, tctx), "taken at once after the holder let go: the waiter that gave up left nothing")
			})
		}
	}
}

// rwFree lets go of both holds prims["RWMutex"] takes.
func rwFree(c *rlock.Client, n string, ctx context.Context) error {
	if err := c.RWMutex(n).RUnlock(ctx); err != nil {
		return err
	}
	return c.RWMutex(n).Unlock(ctx)
}

// waiting counts the rlock Clients subscribed to any kind's channel of
// name: a waiter subscribes before it asks, and stays until it stops.
func waiting(ctx context.Context, rc rueidis.Client, name string) int64 {
	var n int64
	for _, ch := range []string{lockKeys(name).Channel, fairKeys(name).Channel, rwKeys(name).Channel, semaphoreKeys(name).Channel} {
		got, err := redistest.Subscribers(ctx, rc, ch)
		if err == nil {
			n += got
		}
	}
	return n
}
