package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// lockKind is one kind of exclusive hold on a name, as the cross-kind
// tests take it: a Mutex, an RWMutex's write or read hold, a FairMutex, a
// Semaphore of one permit. take tries once (wait 0) or waits up to wait.
type lockKind struct {
	name string
	take func(c *rlock.Client, name string, ctx context.Context, wait time.Duration) (context.Context, bool, error)
	give func(c *rlock.Client, name string, ctx context.Context) error
}

var lockKinds = []lockKind{
	{"Mutex",
		func(c *rlock.Client, n string, ctx context.Context, w time.Duration) (context.Context, bool, error) {
			return c.Mutex(n).TryLock(ctx, w, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Mutex(n).Unlock(ctx) }},
	{"RWMutex.Lock",
		func(c *rlock.Client, n string, ctx context.Context, w time.Duration) (context.Context, bool, error) {
			return c.RWMutex(n).TryLock(ctx, w, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).Unlock(ctx) }},
	{"RWMutex.RLock",
		func(c *rlock.Client, n string, ctx context.Context, w time.Duration) (context.Context, bool, error) {
			return c.RWMutex(n).TryRLock(ctx, w, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).RUnlock(ctx) }},
	{"FairMutex",
		func(c *rlock.Client, n string, ctx context.Context, w time.Duration) (context.Context, bool, error) {
			return c.FairMutex(n).TryLock(ctx, w, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.FairMutex(n).Unlock(ctx) }},
	{"Semaphore",
		func(c *rlock.Client, n string, ctx context.Context, w time.Duration) (context.Context, bool, error) {
			if _, err := c.Semaphore(n).TrySetPermits(ctx, 1); err != nil {
				return ctx, false, err
			}
			return c.Semaphore(n).TryAcquire(ctx, w, 0)
		},
		func(c *rlock.Client, n string, ctx context.Context) error { return c.Semaphore(n).Release(ctx) }},
}

// primitive is the type a kind's holds are of: "RWMutex" for both of its.
func primitive(k lockKind) string {
	p, _, _ := strings.Cut(k.name, ".")
	return p
}

// TestKindsOfOneNameAreIndependent: the rule for a name across kinds is
// that the kind is part of the key. For every pair of kinds, in both
// orders, on standalone Redis and a Cluster: while one Client holds a
// name with the first kind, another Client takes the same name with the
// second at once, and a third Client is still refused the first kind.
func TestKindsOfOneNameAreIndependent(t *testing.T) {
	redistest.ForEachSetup(t, func(t *testing.T, s redistest.Setup) {
		holder, other, third := newRlock(t, s.Client(t)), newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
		for _, a := range lockKinds {
			for _, b := range lockKinds {
				if primitive(a) == primitive(b) { // an RWMutex's read and write holds are one lock's
					continue
				}
				t.Run(a.name+"/"+b.name, func(t *testing.T) {
					name := redistest.LockName(t)
					actx, ok, err := a.take(holder, name, t.Context(), 0)
					require.NoError(t, err)
					require.True(t, ok, "%s is free", a.name)
					bctx, ok, err := b.take(other, name, t.Context(), 0)
					require.NoError(t, err)
					assert.True(t, ok, "a %s of the same name does not wait for a %s", b.name, a.name)
					if a.name != "RWMutex.RLock" { // readers share
						_, ok, err = a.take(third, name, t.Context(), 0)
						require.NoError(t, err)
						assert.False(t, ok, "the %s still excludes another owner of its kind", a.name)
					}
					if ok {
						require.NoError(t, b.give(other, name, bctx))
					}
					require.NoError(t, a.give(holder, name, actx))
				})
			}
		}
	})
}

// TestKindsOfOneNameUnderLoad: goroutines of four Clients take one name
// with every kind at once, in rounds. Within each kind exclusion holds
// (never two inside, readers apart), every kind makes progress without
// waiting for another kind's lease (every take succeeds within a wait far
// shorter than the default lease), and the kinds overlap.
func TestKindsOfOneNameUnderLoad(t *testing.T) {
	const clients, rounds = 4, 15
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	var cs []*rlock.Client
	for range clients {
		cs = append(cs, newRlock(t, s.Client(t)))
	}
	inside := make([]atomic.Int32, len(lockKinds))
	var kindsInside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for k, kind := range lockKinds {
		for _, c := range cs {
			wg.Go(func() {
				for range rounds {
					ctx, ok, err := kind.take(c, name, t.Context(), 10*time.Second)
					if !assert.NoError(t, err) || !assert.True(t, ok, "%s taken within 10 s (the default lease is 30 s)", kind.name) {
						return
					}
					if n := inside[k].Add(1); n > 1 && kind.name != "RWMutex.RLock" {
						t.Errorf("%d owners inside the %s", n, kind.name)
					}
					if kindsInside.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond) // the critical section's length
					kindsInside.Add(-1)
					inside[k].Add(-1)
					assert.NoError(t, kind.give(c, name, ctx))
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d of %d sections overlapped another kind's", overlaps.Load(), len(lockKinds)*clients*rounds)
	assert.Positive(t, overlaps.Load(), fmt.Sprintf("the %d kinds of one name ran side by side", len(lockKinds)))
}
