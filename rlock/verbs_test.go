package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// verb is one method of one primitive, called on the primitive of name
// that Client c hands out, with ctx. Verbs that return no error report a
// missing result as one (errNoResult).
type verb struct {
	prim, name string
	call       func(c *rlock.Client, name string, ctx context.Context) error
}

var errNoResult = errors.New("no result")

// verbCmds builds the commands of the Do verbs; TestEveryVerb sets it.
var verbCmds rueidis.Builder

// prims takes a hold of each primitive, for the verbs that need one: the
// context a holder would pass them.
var prims = map[string]func(c *rlock.Client, name string, ctx context.Context) (context.Context, error){
	"Mutex": func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		return c.Mutex(n).Lock(ctx)
	},
	"FairMutex": func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		return c.FairMutex(n).Lock(ctx)
	},
	"RWMutex": func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		ctx, err := c.RWMutex(n).Lock(ctx)
		if err != nil {
			return ctx, err
		}
		return c.RWMutex(n).RLock(ctx) // both holds: every verb has one to act on
	},
	"Semaphore": func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		if _, err := c.Semaphore(n).TrySetPermits(ctx, 2); err != nil {
			return ctx, err
		}
		return c.Semaphore(n).Acquire(ctx)
	},
	"CountDownLatch": func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		_, err := c.CountDownLatch(n).TrySetCount(ctx, 2)
		return ctx, err
	},
	"MultiLock": func(c *rlock.Client, n string, ctx context.Context) (context.Context, error) {
		return multi(c, n).Lock(ctx)
	},
}

// multi is the MultiLock of the verb tests: two Mutexes of one Client, the
// first called name.
func multi(c *rlock.Client, name string) *rlock.MultiLock {
	return rlock.NewMultiLock(c.Mutex(name), c.Mutex(name+".b"))
}

// result turns a verb's value and error into the error the table checks.
func result[T any](_ T, err error) error { return err }

// took turns a Try verb's result into an error: errNoResult when it did
// not take the lock.
func took(_ context.Context, ok bool, err error) error {
	if err == nil && !ok {
		return errNoResult
	}
	return err
}

// token turns FencingToken's result into an error.
func token(_ int64, ok bool) error {
	if !ok {
		return errNoResult
	}
	return nil
}

const verbLease = time.Minute

// verbs is every verb of every primitive (see the table in the package doc).
var verbs = []verb{
	{"Mutex", "Lock", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Mutex(n).Lock(ctx)) }},
	{"Mutex", "LockFor", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Mutex(n).LockFor(ctx, verbLease))
	}},
	{"Mutex", "TryLock", func(c *rlock.Client, n string, ctx context.Context) error { return took(c.Mutex(n).TryLock(ctx, 0, 0)) }},
	{"Mutex", "Unlock", func(c *rlock.Client, n string, ctx context.Context) error { return c.Mutex(n).Unlock(ctx) }},
	{"Mutex", "ForceUnlock", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Mutex(n).ForceUnlock(ctx)) }},
	{"Mutex", "IsLocked", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Mutex(n).IsLocked(ctx)) }},
	{"Mutex", "HoldCount", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Mutex(n).HoldCount(ctx)) }},
	{"Mutex", "RemainingLease", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Mutex(n).RemainingLease(ctx))
	}},
	{"Mutex", "FencingToken", func(c *rlock.Client, n string, ctx context.Context) error { return token(c.Mutex(n).FencingToken(ctx)) }},
	{"Mutex", "Inspect", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Mutex(n).Inspect(ctx)) }},
	{"Mutex", "Do", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Mutex(n).Do(ctx, verbCmds.Incr().Key(c.Mutex(n).Key("n")).Build()))
	}},

	{"FairMutex", "Lock", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.FairMutex(n).Lock(ctx)) }},
	{"FairMutex", "LockFor", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.FairMutex(n).LockFor(ctx, verbLease))
	}},
	{"FairMutex", "TryLock", func(c *rlock.Client, n string, ctx context.Context) error {
		return took(c.FairMutex(n).TryLock(ctx, 0, 0))
	}},
	{"FairMutex", "Unlock", func(c *rlock.Client, n string, ctx context.Context) error { return c.FairMutex(n).Unlock(ctx) }},
	{"FairMutex", "ForceUnlock", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.FairMutex(n).ForceUnlock(ctx))
	}},
	{"FairMutex", "IsLocked", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.FairMutex(n).IsLocked(ctx))
	}},
	{"FairMutex", "HoldCount", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.FairMutex(n).HoldCount(ctx))
	}},
	{"FairMutex", "RemainingLease", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.FairMutex(n).RemainingLease(ctx))
	}},
	{"FairMutex", "FencingToken", func(c *rlock.Client, n string, ctx context.Context) error {
		return token(c.FairMutex(n).FencingToken(ctx))
	}},
	{"FairMutex", "Inspect", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.FairMutex(n).Inspect(ctx)) }},
	{"FairMutex", "Do", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.FairMutex(n).Do(ctx, verbCmds.Incr().Key(c.FairMutex(n).Key("n")).Build()))
	}},

	{"RWMutex", "Lock", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.RWMutex(n).Lock(ctx)) }},
	{"RWMutex", "LockFor", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.RWMutex(n).LockFor(ctx, verbLease))
	}},
	{"RWMutex", "TryLock", func(c *rlock.Client, n string, ctx context.Context) error {
		return took(c.RWMutex(n).TryLock(ctx, 0, 0))
	}},
	{"RWMutex", "Unlock", func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).Unlock(ctx) }},
	{"RWMutex", "RLock", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.RWMutex(n).RLock(ctx)) }},
	{"RWMutex", "RLockFor", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.RWMutex(n).RLockFor(ctx, verbLease))
	}},
	{"RWMutex", "TryRLock", func(c *rlock.Client, n string, ctx context.Context) error {
		return took(c.RWMutex(n).TryRLock(ctx, 0, 0))
	}},
	{"RWMutex", "RUnlock", func(c *rlock.Client, n string, ctx context.Context) error { return c.RWMutex(n).RUnlock(ctx) }},
	{"RWMutex", "ForceUnlock", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.RWMutex(n).ForceUnlock(ctx))
	}},
	{"RWMutex", "IsLocked", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.RWMutex(n).IsLocked(ctx)) }},
	{"RWMutex", "HoldCount", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.RWMutex(n).HoldCount(ctx)) }},
	{"RWMutex", "RHoldCount", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.RWMutex(n).RHoldCount(ctx))
	}},
	{"RWMutex", "RemainingLease", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.RWMutex(n).RemainingLease(ctx))
	}},
	{"RWMutex", "FencingToken", func(c *rlock.Client, n string, ctx context.Context) error {
		return token(c.RWMutex(n).FencingToken(ctx))
	}},
	{"RWMutex", "Inspect", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.RWMutex(n).Inspect(ctx)) }},
	{"RWMutex", "Do", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.RWMutex(n).Do(ctx, verbCmds.Incr().Key(c.RWMutex(n).Key("n")).Build()))
	}},

	{"Semaphore", "Acquire", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Semaphore(n).Acquire(ctx)) }},
	{"Semaphore", "AcquireFor", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Semaphore(n).AcquireFor(ctx, verbLease))
	}},
	{"Semaphore", "TryAcquire", func(c *rlock.Client, n string, ctx context.Context) error {
		return took(c.Semaphore(n).TryAcquire(ctx, 0, 0))
	}},
	{"Semaphore", "Release", func(c *rlock.Client, n string, ctx context.Context) error { return c.Semaphore(n).Release(ctx) }},
	{"Semaphore", "ForceRelease", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Semaphore(n).ForceRelease(ctx))
	}},
	{"Semaphore", "HoldCount", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Semaphore(n).HoldCount(ctx))
	}},
	{"Semaphore", "Available", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Semaphore(n).Available(ctx))
	}},
	{"Semaphore", "AddPermits", func(c *rlock.Client, n string, ctx context.Context) error { return c.Semaphore(n).AddPermits(ctx, 1) }},
	{"Semaphore", "Inspect", func(c *rlock.Client, n string, ctx context.Context) error { return result(c.Semaphore(n).Inspect(ctx)) }},
	{"Semaphore", "AcquirePermit", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.Semaphore(n).AcquirePermit(ctx, verbLease))
	}},
	{"Semaphore", "TryAcquirePermit", func(c *rlock.Client, n string, ctx context.Context) error {
		id, ok, err := c.Semaphore(n).TryAcquirePermit(ctx, 0, verbLease)
		return took(ctx, ok && id != "", err)
	}},
	// A permit travels: the verbs that take its id get one taken with no
	// owner (its failure, on a bad handle, is the verb's to report).
	{"Semaphore", "ExtendPermit", func(c *rlock.Client, n string, ctx context.Context) error {
		id, _, _ := c.Semaphore(n).TryAcquirePermit(context.Background(), 0, verbLease)
		return c.Semaphore(n).ExtendPermit(ctx, id, 2*verbLease)
	}},
	{"Semaphore", "ReleasePermit", func(c *rlock.Client, n string, ctx context.Context) error {
		id, _, _ := c.Semaphore(n).TryAcquirePermit(context.Background(), 0, verbLease)
		return c.Semaphore(n).ReleasePermit(ctx, id)
	}},

	{"CountDownLatch", "TrySetCount", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.CountDownLatch(n).TrySetCount(ctx, 1))
	}},
	{"CountDownLatch", "CountDown", func(c *rlock.Client, n string, ctx context.Context) error { return c.CountDownLatch(n).CountDown(ctx) }},
	{"CountDownLatch", "Count", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(c.CountDownLatch(n).Count(ctx))
	}},

	{"MultiLock", "Lock", func(c *rlock.Client, n string, ctx context.Context) error { return result(multi(c, n).Lock(ctx)) }},
	{"MultiLock", "LockFor", func(c *rlock.Client, n string, ctx context.Context) error {
		return result(multi(c, n).LockFor(ctx, verbLease))
	}},
	{"MultiLock", "TryLock", func(c *rlock.Client, n string, ctx context.Context) error {
		return took(multi(c, n).TryLock(ctx, 0, 0))
	}},
	{"MultiLock", "Unlock", func(c *rlock.Client, n string, ctx context.Context) error { return multi(c, n).Unlock(ctx) }},
}

// TestEveryVerb calls every verb of every primitive (the package doc's
// table) in each way a caller can: as the holder (or, for the verbs that
// take a hold, with the holder's context, which re-enters or shares), with
// a nil context, on a nil Client's handle, on a closed Client's, and with
// the empty name. The holder's call succeeds; every other gets its
// sentinel error, never a panic.
func TestEveryVerb(t *testing.T) {
	c := sharedClient(t)
	verbCmds = redistest.Shared(t).Client(t).B()
	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	var nilClient *rlock.Client
	for _, v := range verbs {
		t.Run(v.prim+"."+v.name, func(t *testing.T) {
			name := redistest.LockName(t)
			hctx, err := prims[v.prim](c, name, t.Context())
			require.NoError(t, err)
			assert.NoError(t, v.call(c, name, hctx), "the holder's call")

			tokenless := v.name == "FencingToken" // it has no error to return
			if err := v.call(c, name, nil); !tokenless {
				assert.ErrorIs(t, err, rlock.ErrNilContext, "a nil context")
			} else {
				assert.ErrorIs(t, err, errNoResult, "a nil context carries no hold")
			}
			for what, want := range map[string]struct {
				c    *rlock.Client
				name string
				err  error
			}{
				"a nil Client's handle":    {nilClient, name, rlock.ErrNilClient},
				"a closed Client's handle": {closed, name, rlock.ErrClosed},
				"the empty name":           {c, "", rlock.ErrInvalidName},
			} {
				err := v.call(want.c, want.name, t.Context())
				if tokenless {
					want.err = errNoResult
				}
				assert.ErrorIs(t, err, want.err, what)
			}
		})
	}
}
