package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// fixedLeaseVerb is a verb with a fixed lease that the vocabulary gave a
// primitive (RWMutex.LockFor and RLockFor, Semaphore.AcquireFor), with
// what a test needs to drive it: its keys, how it takes and gives back a
// hold, and the hold count of a context.
type fixedLeaseVerb struct {
	name  string
	keys  func(name string) keys.Keys
	take  func(c *rlock.Client, n string, ctx context.Context) (context.Context, error)
	give  func(c *rlock.Client, n string, ctx context.Context) error
	count func(c *rlock.Client, n string, ctx context.Context) (int, error)
}

var fixedLeaseVerbs = []fixedLeaseVerb{
	{"RWMutex.LockFor", rwKeys,
		func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
			return c.RWMutex(n).LockFor(ctx, time.Minute)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).Unlock(ctx) },
		func(c *rlock.Client, n string, ctx context.Context) (int, error) { return c.RWMutex(n).HoldCount(ctx) }},
	{"RWMutex.RLockFor", rwKeys,
		func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
			return c.RWMutex(n).RLockFor(ctx, time.Minute)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).RUnlock(ctx) },
		func(c *rlock.Client, n string, ctx context.Context) (int, error) { return c.RWMutex(n).RHoldCount(ctx) }},
	{"Semaphore.AcquireFor", func(n string) keys.Keys { return keys.NewSemaphore(rlock.DefaultKeyPrefix, n) },
		func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
			if _, err := c.Semaphore(n).TrySetPermits(ctx, 3); err != nil {
				return ctx, err
			}
			return c.Semaphore(n).AcquireFor(ctx, time.Minute)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Semaphore(n).Release(ctx) },
		func(c *rlock.Client, n string, ctx context.Context) (int, error) {
			return c.Semaphore(n).HoldCount(ctx)
		}},
}

// TestFaultFixedLeaseVerbsLostReplies loses, after each ran, the reply of
// a first take, of a re-entry, and of each give-back, for every fixed-lease
// verb: each request applies once, the counts are what was asked, and the
// last give-back leaves nothing held.
func TestFaultFixedLeaseVerbsLostReplies(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	for _, v := range fixedLeaseVerbs {
		t.Run(v.name, func(t *testing.T) {
			name := redistest.LockName(t)
			k := v.keys(name)
			loss := &replyLoss{hash: k.Hash}
			c := newRlock(t, loss.client(node.Client(t)))

			loss.acquire.Store(1)
			ctx, err := v.take(c, name, t.Context())
			require.NoError(t, err, "a take whose first reply was lost")
			loss.acquire.Store(1)
			inner, err := v.take(c, name, ctx)
			require.NoError(t, err, "a re-entry whose first reply was lost")
			require.EqualValues(t, 2, loss.lost.Load(), "both takes ran and lost their replies")
			n, err := v.count(c, name, ctx)
			require.NoError(t, err)
			assert.Equal(t, 2, n, "two takes, two levels")

			loss.release.Store(2)
			require.NoError(t, v.give(c, name, inner), "a give-back whose reply was lost")
			require.NoError(t, v.give(c, name, ctx), "the last give-back, whose reply was lost")
			require.EqualValues(t, 4, loss.lost.Load())
			assert.ErrorIs(t, ctx.Err(), context.Canceled, "the last give-back ends the context")
			n, err = v.count(c, name, ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "nothing is held")
			assert.False(t, keyExists(t, raw, k.Hash), "nothing is left in Redis")
		})
	}
}
