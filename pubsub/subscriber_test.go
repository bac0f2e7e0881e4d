package pubsub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestLastWaiterUnsubscribes: waiters share one subscription per channel,
// and the last one to leave ends it on the server.
func TestLastWaiterUnsubscribes(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch, other := channelName(t, "a"), channelName(t, "b")
		a, b := e.subscribe(t, ch), e.subscribe(t, ch)
		c := e.subscribe(t, other)
		require.Equal(t, 2, e.subs.Channels())
		require.EqualValues(t, 1, e.numsub(t, ch), "two waiters share one subscription")

		a.Done(false)
		require.EqualValues(t, 1, e.numsub(t, ch), "a waiter is left")
		b.Done(true)
		require.Eventually(t, func() bool { return e.unsubscribed(t.Context(), ch) && e.subs.Channels() == 1 },
			wakeWithin, 5*time.Millisecond, "the last waiter of %s unsubscribed, and only it", ch)
		require.EqualValues(t, 1, e.numsub(t, other))
		c.Done(false)
		e.requireGone(t, other)
	})
}

// TestChurnGetsFreshSubscription: a waiter that arrives while the last one's
// unsubscribe is under way still gets a confirmed subscription, which a
// message published after Subscribe returns reaches.
func TestChurnGetsFreshSubscription(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		for i := range 50 {
			e.subscribe(t, ch).Done(false)
			w := e.subscribe(t, ch)
			require.EqualValues(t, 1, e.publish(t, ch), "round %d: the new waiter's subscription is live", i)
			requireWoken(t, w, "round %d", i)
			w.Done(false)
		}
		e.requireGone(t, ch)
	})
}

// TestSubscribeStorm: many Subscribe calls, cancelled at random while they
// wait for confirmation or soon after, leave no channel, no server-side
// subscription and no goroutine behind.
func TestSubscribeStorm(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		chans := make([]string, 4)
		for i := range chans {
			chans[i] = channelName(t, fmt.Sprint(i))
		}
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), rand.N(3*time.Millisecond))
				defer cancel()
				w, err := e.subs.Subscribe(ctx, chans[i%len(chans)])
				if err != nil {
					assert.ErrorIs(t, err, context.DeadlineExceeded) // not require: this is not the test's goroutine
					return
				}
				time.Sleep(rand.N(2 * time.Millisecond)) // a stay of random length, so that leaving meets subscribing
				w.Done(rand.N(2) == 0)
			})
		}
		wg.Wait()
		e.requireGone(t, chans...)
	})
}

// TestManyWaiters: one Subscriber serves 1000 waiters on 100 channels, and
// 10 messages per channel wake all 10 waiters of each.
func TestManyWaiters(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		const channels, perChannel = 100, 10
		waiters := make([][]*Waiter, channels)
		var mu sync.Mutex
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(t.Context(), wakeWithin)
		defer cancel()
		for i := range channels {
			for range perChannel {
				wg.Go(func() {
					// Not e.subscribe, whose require and Cleanup belong on
					// the test's goroutine.
					w, err := e.subs.Subscribe(ctx, channelName(t, fmt.Sprint(i)))
					if !assert.NoError(t, err, "Subscribe to channel %d", i) {
						return
					}
					mu.Lock()
					waiters[i] = append(waiters[i], w)
					mu.Unlock()
				})
			}
		}
		wg.Wait()
		for _, ws := range waiters {
			for _, w := range ws {
				t.Cleanup(func() { w.Done(false) })
			}
		}
		require.False(t, t.Failed(), "every Subscribe succeeded")
		require.Equal(t, channels, e.subs.Channels())

		cmds := make(rueidis.Commands, 0, channels*perChannel)
		for i := range channels {
			for range perChannel {
				ch := channelName(t, fmt.Sprint(i))
				if e.sharded {
					cmds = append(cmds, e.admin.B().Spublish().Channel(ch).Message("unlocked").Build())
				} else {
					cmds = append(cmds, e.admin.B().Publish().Channel(ch).Message("unlocked").Build())
				}
			}
		}
		for _, r := range e.admin.DoMulti(t.Context(), cmds...) {
			n, err := r.AsInt64()
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "each channel has one subscription")
		}
		for i, ws := range waiters {
			for j, w := range ws {
				require.Eventually(t, func() bool { return len(w.Wake()) == 1 }, wakeWithin, time.Millisecond,
					"waiter %d of channel %d not woken", j, i)
			}
		}

		for _, ws := range waiters {
			for _, w := range ws {
				w.Done(true)
			}
		}
		e.requireGone(t, channelName(t, "0"), channelName(t, fmt.Sprint(channels-1)))
	})
}

// TestCloseWakesEveryone: Close wakes every waiter for good, unsubscribes
// before it returns, and makes Subscribe fail with ErrClosed.
func TestCloseWakesEveryone(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch, other := channelName(t, "a"), channelName(t, "b")
		ws := []*Waiter{e.subscribe(t, ch), e.subscribe(t, ch), e.subscribe(t, other)}

		require.NoError(t, e.subs.Close())
		for _, w := range ws {
			_, open := <-w.Wake()
			require.False(t, open, "Wake is closed")
			w.Done(false) // harmless after Close
		}
		require.Zero(t, e.subs.Channels())
		require.Zero(t, e.numsub(t, ch), "Close unsubscribed before it returned")
		require.Zero(t, e.numsub(t, other), "Close unsubscribed before it returned")

		_, err := e.subs.Subscribe(t.Context(), ch)
		require.ErrorIs(t, err, ErrClosed)
		require.NoError(t, e.subs.Close(), "Close again")
	})
}

// TestSubscribeContext: Subscribe gives up when its ctx ends before Redis
// confirms, and the subscription it started is undone.
func TestSubscribeContext(t *testing.T) {
	forEachMode(t, true, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := e.subs.Subscribe(ctx, ch)
		require.ErrorIs(t, err, context.Canceled)

		requireControllable(t, e)
		require.NoError(t, e.node.Pause(t.Context()))
		paused := true
		t.Cleanup(func() {
			if paused {
				require.NoError(t, e.node.Resume(context.Background()))
			}
		})
		ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err = e.subs.Subscribe(ctx, ch)
		require.ErrorIs(t, err, context.DeadlineExceeded, "Redis is paused: no confirmation")
		require.NoError(t, e.node.Resume(t.Context()))
		paused = false

		e.requireGone(t, ch)
		w := e.subscribe(t, ch)
		e.publish(t, ch)
		requireWoken(t, w, "the channel works again")
	})
}

// TestCloseWhileSubscribing: Close fails a Subscribe that waits for a
// confirmation Redis does not send, and returns even though its
// unsubscribe cannot be answered.
func TestCloseWhileSubscribing(t *testing.T) {
	forEachMode(t, true, func(t *testing.T, e *env) {
		requireControllable(t, e)
		ch := channelName(t, "unlock")
		require.NoError(t, e.node.Pause(t.Context()))
		t.Cleanup(func() { require.NoError(t, e.node.Resume(context.Background())) })

		errs := make(chan error, 1)
		go func() {
			_, err := e.subs.Subscribe(t.Context(), ch)
			errs <- err
		}()
		require.Eventually(t, func() bool { return e.subs.Channels() == 1 }, wakeWithin, time.Millisecond)
		require.NoError(t, e.subs.Close())
		require.ErrorIs(t, <-errs, ErrClosed)
		require.Zero(t, e.subs.Channels())
	})
}

// TestRefusedSubscription: a subscription Redis refuses fails Subscribe at
// once with Redis's error instead of leaving it waiting.
func TestRefusedSubscription(t *testing.T) {
	forEachMode(t, true, func(t *testing.T, e *env) {
		requireControllable(t, e)
		acl := e.admin.B().AclSetuser().Username("waiter").Rule("on", ">secret", "~*", "&allowed:*", "+@all").Build()
		require.NoError(t, e.admin.Do(t.Context(), acl).Error())
		opt := redistest.ClientOption(e.node.Addr())
		opt.Username, opt.Password = "waiter", "secret"
		rc, err := rueidis.NewClient(opt)
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		subs := New(rc, e.sharded, 0, nil, "")
		t.Cleanup(func() { require.NoError(t, subs.Close()) })

		ctx, cancel := context.WithTimeout(t.Context(), wakeWithin)
		defer cancel()
		_, err = subs.Subscribe(ctx, "denied")
		var rerr *rueidis.RedisError
		require.ErrorAs(t, err, &rerr)
		require.Contains(t, rerr.Error(), "NOPERM")
		require.NoError(t, ctx.Err(), "refused at once, not after ctx ended")
		require.Eventually(t, func() bool { return subs.Channels() == 0 }, wakeWithin, time.Millisecond)

		w, err := subs.Subscribe(ctx, "allowed:unlock")
		require.NoError(t, err)
		w.Done(false)
	})
}

// requireControllable skips a test that pauses Redis or changes its users
// when the harness runs on a server it does not own (REDIS_ADDR).
func requireControllable(t *testing.T, e *env) {
	t.Helper()
	if !e.node.Controllable() {
		t.Skip("needs a Redis the harness controls; REDIS_ADDR names an external one")
	}
}
