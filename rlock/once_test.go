package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// onceWrite is a write that runs once (once.go), tried through a Client
// on a link the test slows or cuts: do makes it, and state reads, through
// another Client, what it changes ("applied" once it ran).
type onceWrite struct {
	name string
	// setup runs before the link is slowed; it returns the lock context
	// of a hold of c's the write ends, if any.
	setup func(t *testing.T, c, direct *rlock.Client, name string) context.Context
	do    func(ctx context.Context, c *rlock.Client, name string) error
	state func(t *testing.T, direct *rlock.Client, name string) string
}

// permitIDs are the travelling permits the ExtendPermit case's setups
// took, by name.
var permitIDs = map[string]string{}

var onceWrites = []onceWrite{
	{"ForceUnlock",
		func(t *testing.T, c, _ *rlock.Client, name string) context.Context {
			held, err := c.Mutex(name).Lock(t.Context())
			require.NoError(t, err)
			return held
		},
		func(ctx context.Context, c *rlock.Client, name string) error {
			_, err := c.Mutex(name).ForceUnlock(ctx)
			return err
		},
		func(t *testing.T, direct *rlock.Client, name string) string {
			locked, err := direct.Mutex(name).IsLocked(t.Context())
			require.NoError(t, err)
			return map[bool]string{true: "held", false: "applied"}[locked]
		}},
	{"AddPermits",
		func(t *testing.T, _, direct *rlock.Client, name string) context.Context {
			_, err := direct.Semaphore(name).TrySetPermits(t.Context(), 1)
			require.NoError(t, err)
			return nil
		},
		func(ctx context.Context, c *rlock.Client, name string) error {
			return c.Semaphore(name).AddPermits(ctx, 1)
		},
		func(t *testing.T, direct *rlock.Client, name string) string {
			n, err := direct.Semaphore(name).Available(t.Context())
			require.NoError(t, err)
			return map[bool]string{true: "applied", false: fmt.Sprint(n, " permits")}[n == 2]
		}},
	{"TrySetPermits",
		func(*testing.T, *rlock.Client, *rlock.Client, string) context.Context { return nil },
		func(ctx context.Context, c *rlock.Client, name string) error {
			_, err := c.Semaphore(name).TrySetPermits(ctx, 3)
			return err
		},
		func(t *testing.T, direct *rlock.Client, name string) string {
			n, err := direct.Semaphore(name).Available(t.Context())
			require.NoError(t, err)
			return map[bool]string{true: "applied", false: fmt.Sprint(n, " permits")}[n == 3]
		}},
	{"TrySetCount",
		func(*testing.T, *rlock.Client, *rlock.Client, string) context.Context { return nil },
		func(ctx context.Context, c *rlock.Client, name string) error {
			_, err := c.CountDownLatch(name).TrySetCount(ctx, 5)
			return err
		},
		func(t *testing.T, direct *rlock.Client, name string) string {
			n, err := direct.CountDownLatch(name).Count(t.Context())
			require.NoError(t, err)
			return map[bool]string{true: "applied", false: fmt.Sprint("count ", n)}[n == 5]
		}},
	{"ExtendPermit",
		func(t *testing.T, _, direct *rlock.Client, name string) context.Context {
			s := direct.Semaphore(name)
			_, err := s.TrySetPermits(t.Context(), 1)
			require.NoError(t, err)
			id, err := s.AcquirePermit(t.Context(), 5*time.Second)
			require.NoError(t, err)
			permitIDs[name] = id
			return nil
		},
		func(ctx context.Context, c *rlock.Client, name string) error {
			return c.Semaphore(name).ExtendPermit(ctx, permitIDs[name], time.Minute)
		},
		func(t *testing.T, direct *rlock.Client, name string) string {
			st, err := direct.Semaphore(name).Inspect(t.Context())
			require.NoError(t, err)
			require.Len(t, st.Holders, 1, "the permit")
			return map[bool]string{true: "applied", false: "lease as it was"}[st.Holders[0].Lease > 30*time.Second]
		}},
}

// proxied returns an rlock Client whose rueidis client talks to the shared
// Redis through a proxy, and the proxy.
func proxied(t *testing.T) (*rlock.Client, *redistest.Proxy) {
	t.Helper()
	p := redistest.Shared(t).Proxy(t)
	rc, err := rueidis.NewClient(redistest.ClientOption(p.Addr()))
	require.NoError(t, err)
	c := newRlock(t, rc)
	t.Cleanup(rc.Close) // after c's Close, which cleanups run first
	return c, p
}

// TestOnceWritesGivenUpApplyBeforeReturnOrNever: each write that runs
// once is made over a link that delays every byte 30 ms, with a context
// that ends at a random moment of the exchange, mostly before the reply
// can come. Whatever it returns, Redis agrees at once, and still agrees
// once every byte in flight has landed: a nil error means the write
// applied, any other error (none wraps ErrOutcomeUnknown: the link is
// alive) that it did not and never will. A ForceUnlock that applied ended
// the Client's own hold. (These writes were sent once with the caller's
// context: one given up returned its ctx's error, and applied a few
// milliseconds later: a lock deleted under a live holder, a permit or
// count set, a lease lengthened.)
func TestOnceWritesGivenUpApplyBeforeReturnOrNever(t *testing.T) {
	const delay = 30 * time.Millisecond
	direct := sharedClient(t)
	for _, w := range onceWrites {
		t.Run(w.name, func(t *testing.T) {
			c, p := proxied(t)
			outcomes := map[string]int{}
			for round := range 8 {
				name := fmt.Sprintf("%s.%d", redistest.LockName(t), round)
				held := w.setup(t, c, direct, name)
				p.Delay(delay)
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.Int64N(int64(3*delay)))+time.Millisecond)
				err := w.do(ctx, c, name)
				late := err == nil && ctx.Err() != nil
				cancel()
				now := w.state(t, direct, name)
				p.Delay(0)
				time.Sleep(4 * delay) // a copy in flight lands
				later := w.state(t, direct, name)

				require.NotErrorIs(t, err, rlock.ErrOutcomeUnknown, "round %d: the link is alive", round)
				if err == nil {
					assert.Equal(t, "applied", now, "round %d: the write returned nil", round)
				} else {
					assert.NotEqual(t, "applied", now, "round %d: the write returned %v", round, err)
				}
				assert.Equal(t, now, later, "round %d: the write (it returned %v) changed Redis after it returned", round, err)
				if held != nil && now == "applied" {
					assert.ErrorIs(t, context.Cause(held), rlock.ErrLockLost, "round %d: the Client's own hold ended with the lock", round)
				}
				switch {
				case late:
					outcomes["applied as its ctx ended"]++
				case err == nil:
					outcomes["applied"]++
				default:
					outcomes["not applied"]++
				}
			}
			t.Logf("outcomes: %v", outcomes)
		})
	}
}

// TestOnceWriteLostBeforeRedisNeverApplies: a write that runs once is
// held on a cut link until its context ends, and its connection is then
// reset: the write never reached Redis. It returns its ctx's error, not
// ErrOutcomeUnknown, once its settling call, resent on a new connection,
// voided it; and the copy held on the link never applies.
func TestOnceWriteLostBeforeRedisNeverApplies(t *testing.T) {
	direct := sharedClient(t)
	for _, w := range onceWrites {
		t.Run(w.name, func(t *testing.T) {
			c, p := proxied(t)
			name := redistest.LockName(t)
			w.setup(t, c, direct, name)
			before := w.state(t, direct, name)
			require.NotEqual(t, "applied", before)
			p.Cut()
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			done := make(chan error, 1)
			go func() { done <- w.do(ctx, c, name) }()
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // the settling call is held too
			p.Reset()
			p.Heal()
			err := <-done
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.False(t, errors.Is(err, rlock.ErrOutcomeUnknown), "settled: %v", err)
			assert.Equal(t, before, w.state(t, direct, name), "a write that returned %v applied", err)
			time.Sleep(200 * time.Millisecond)
			assert.Equal(t, before, w.state(t, direct, name), "the held copy applied later")
		})
	}
}
