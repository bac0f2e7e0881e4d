package rlock_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// onWaitKey carries, in a call's context, what onWaitHooks runs when the
// call begins to wait.
type onWaitKey struct{}

// onWaitHooks runs the func a call's context carries under onWaitKey when
// the call begins to wait: after its first refused attempt, before it
// subscribes. They steer the timing of a test, nothing else.
type onWaitHooks struct{ rlock.NopHooks }

func (onWaitHooks) AcquireWait(ctx context.Context, _ rlock.LockRef) {
	if f, _ := ctx.Value(onWaitKey{}).(func()); f != nil {
		f()
	}
}

// markedWait is a kind whose waiters' refusals mark their owner as
// waiting, which the owner's calls share: wait waits on name as ctx's
// owner, and marked reports whether Redis holds the owner's mark.
type markedWait struct {
	name   string
	wait   func(c *rlock.Client, name string, ctx context.Context) error
	block  func(c *rlock.Client, name string) (release func() error)
	marked func(t *testing.T, rc rueidis.Client, name string) bool
}

var markedWaits = []markedWait{
	{"FairMutex",
		func(c *rlock.Client, n string, ctx context.Context) error { return result(c.FairMutex(n).Lock(ctx)) },
		func(c *rlock.Client, n string) func() error {
			held, err := c.FairMutex(n).Lock(context.Background())
			if err != nil {
				return func() error { return err }
			}
			return func() error { return c.FairMutex(n).Unlock(held) }
		},
		func(t *testing.T, rc rueidis.Client, n string) bool { return len(queued(t, rc, n)) > 0 }},
	{"RWMutex.RLock",
		func(c *rlock.Client, n string, ctx context.Context) error { return result(c.RWMutex(n).RLock(ctx)) },
		func(c *rlock.Client, n string) func() error {
			held, err := c.RWMutex(n).Lock(context.Background())
			if err != nil {
				return func() error { return err }
			}
			return func() error { return c.RWMutex(n).Unlock(held) }
		},
		func(t *testing.T, rc rueidis.Client, n string) bool {
			m, err := rc.Do(t.Context(), rc.B().Hgetall().Key(rwKeys(n).Hash).Build()).AsStrMap()
			require.NoError(t, err)
			for f := range m {
				if strings.HasSuffix(f, ":r#wait") {
					return true
				}
			}
			return false
		}},
}

// TestSharedOwnerMarkOutlivesTheCallThatLeft: one call of an owner waits
// (a FairMutex's queue place, an RWMutex reader's mark), and another call
// of the owner begins to wait just as the first gives up, at a random
// moment around it. The owner stays marked while the second waits, round
// after round. (The first, the last to leave as its Subscriber saw it,
// withdrew the owner's mark after the second had joined and asked: the
// second slept unmarked, a later Client's waiter ahead of it.)
func TestSharedOwnerMarkOutlivesTheCallThatLeft(t *testing.T) {
	const rounds = 150
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	holder := newRlock(t, s.Client(t))
	c := newRlock(t, s.Client(t), rlock.WithHooks(onWaitHooks{}))
	for _, k := range markedWaits {
		t.Run(k.name, func(t *testing.T) {
			name := redistest.LockName(t)
			release := k.block(holder, name)
			owner := sharedOwner(t, c, name)
			start := func(onWait func()) (context.CancelFunc, <-chan error) {
				ctx, cancel := context.WithCancel(context.WithValue(owner, onWaitKey{}, onWait))
				got := make(chan error, 1)
				go func() { got <- k.wait(c, name, ctx) }()
				return cancel, got
			}
			// The waiting call marks the owner within a round trip or
			// two; one that lost its mark asks again only when the
			// holder's lease (30 s) would end.
			stillMarked := func(round int) {
				for end := time.Now().Add(5 * time.Second); !k.marked(t, raw, name); {
					require.True(t, time.Now().Before(end), "round %d: the owner unmarked 5 s after a call of it began to wait", round)
					time.Sleep(time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond) // a withdraw that raced the ask lands
				require.True(t, k.marked(t, raw, name), "round %d: the owner's mark, while a call of it waits", round)
			}
			cancel, got := start(nil)
			stillMarked(-1)
			for round := range rounds {
				leave, spin := cancel, time.Duration(rand.IntN(60))*time.Microsecond
				next, nextGot := start(func() {
					leave()
					for end := time.Now().Add(spin); time.Now().Before(end); {
					}
				})
				require.ErrorIs(t, receive(t, got, "the call that leaves"), context.Canceled)
				stillMarked(round)
				cancel, got = next, nextGot
			}
			cancel()
			require.ErrorIs(t, receive(t, got, "the last call"), context.Canceled)
			require.NoError(t, release())
		})
	}
}
