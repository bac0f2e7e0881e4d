package rlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// The Redis side of the tests (setups, unique names, subscriber and key
// checks) is in internal/redistest, shared with integration's tests. These
// two need package rlock, which redistest cannot import: rlock's own
// package-internal tests import redistest.

// sharedOwner returns an owner context for goroutines to share: one that
// carries an owner of c but no hold of the lock called name, since it
// holds another (name + ":other"), which it lets go when t ends, before c
// is closed. Goroutines that Lock name with it are one owner, as code on
// one Java thread would be.
func sharedOwner(t *testing.T, c *rlock.Client, name string) context.Context {
	t.Helper()
	other := c.Mutex(name + ":other")
	owner, err := other.Lock(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, other.Unlock(owner), "the shared owner's own lock") })
	return owner
}

// newRlock returns an rlock Client on rc, closed when t ends.
func newRlock(t *testing.T, rc rueidis.Client, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// sharedClient returns an rlock Client on the package's shared Redis,
// closed when t ends.
func sharedClient(t *testing.T, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	return newRlock(t, redistest.Shared(t).Client(t), opts...)
}

// drainable is an rlock Client and the rueidis client it alone runs on,
// for a test that drains them.
type drainable struct {
	*rlock.Client
	rc rueidis.Client
}

// newDrainable returns an rlock Client on a new rueidis client of s, both
// closed when t ends unless drain closed them first.
func newDrainable(t *testing.T, s redistest.Setup, opts ...rlock.Option) drainable {
	t.Helper()
	rc := s.Client(t)
	return drainable{newRlock(t, rc, opts...), rc}
}

// drain closes each Client, then its rueidis client, whose Close returns
// only once every call it sent was answered. So when drain returns, every
// request the Clients sent has reached Redis and done what it does, a
// request that its caller gave up on the way included: a test checks what
// a late copy left without a pause that hopes it came.
func drain(t *testing.T, cs ...drainable) {
	t.Helper()
	for _, c := range cs {
		require.NoError(t, c.Close())
		c.rc.Close()
	}
}

// lockKeys are the Redis names of lock name under the default prefix.
func lockKeys(name string) keys.Keys {
	return keys.New(rlock.DefaultKeyPrefix, name)
}

// waitWaiting waits until subs rlock Clients wait for the lock whose keys
// are k: an acquire was refused and marked the hash, and that many Clients
// are subscribed to the lock's channel, which a Client is once for all its
// waiters. rc is a client of the lock's Redis.
func waitWaiting(t *testing.T, rc rueidis.Client, k keys.Keys, subs int64) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%d Clients waiting for %s", subs, k.Hash), func(ctx context.Context) error {
		marked, err := rc.Do(ctx, rc.B().Hexists().Key(k.Hash).Field("waiters").Build()).AsBool()
		if err != nil {
			return err
		}
		if !marked {
			return fmt.Errorf("no refused acquire marked %s", k.Hash)
		}
		n, err := redistest.Subscribers(ctx, rc, k.Channel)
		if err != nil {
			return err
		}
		return redistest.Exactly("Clients subscribed", n, subs)
	})
}

// rwKeys are the Redis names of read-write lock name under the default
// prefix.
func rwKeys(name string) keys.Keys {
	return keys.NewRW(rlock.DefaultKeyPrefix, name)
}

// fairKeys are the Redis names of fair lock name under the default prefix.
func fairKeys(name string) keys.Keys {
	return keys.NewFair(rlock.DefaultKeyPrefix, name)
}

// waitWaits waits until the acquires that rec records have begun to wait n
// times (AcquireWait): each found its lock held and now subscribes and
// sleeps.
func waitWaits(t *testing.T, rec *hooktest.Recorder, n int) {
	t.Helper()
	rec.WaitFor(t, fmt.Sprintf("%d acquires waiting", n), func(e hooktest.Events) bool { return e.Waits == n })
}

// receive returns what ch delivers, and fails t when nothing came within
// redistest.Patience: a bound only for a test that hangs, not a measure.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(redistest.Patience):
		t.Fatalf("%s: nothing within %v", what, redistest.Patience)
		panic("unreachable")
	}
}

// closeWhileRunning closes c while the goroutines of wg make calls on it,
// once they have taken some locks, and checks what every such test demands:
// Close returns, every call returns, no call met an error in bad (the calls
// put there the errors that were neither their own result nor ErrClosed),
// and every lock context of c in contexts is done. mu guards bad and
// contexts.
func closeWhileRunning(t *testing.T, c *rlock.Client, wg *sync.WaitGroup, mu *sync.Mutex, bad *[]error, contexts *[]context.Context) {
	t.Helper()
	redistest.Eventually(t, "the Client's goroutines take locks", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(*contexts) < 10 {
			return fmt.Errorf("%d locks taken", len(*contexts))
		}
		return nil
	})
	// Close wakes the calls and stops its goroutines in milliseconds; the
	// bound, loose enough for a loaded machine, catches a Close that waits
	// for the calls or for their locks instead.
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 5*time.Second, "Close returns promptly")
	waitGroup(t, wg, redistest.Patience, "every call returns after Close")

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, *bad, "calls ended only with their own result or ErrClosed")
	assert.NotEmpty(t, *contexts, "the Client took locks before it closed")
	for _, lctx := range *contexts {
		assert.Error(t, lctx.Err(), "every lock context of the closed Client is done")
	}
}
