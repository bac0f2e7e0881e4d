package pubsub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// Several Subscribers on one rueidis client share its connection, as
// several rlock Clients on one rueidis client do: one Subscriber's
// UNSUBSCRIBE of a channel ends the subscription of every Subscriber on
// the connection that listens there, and rueidis ends their Receive calls.

// TestSharedConnectionLeavesNoInbox: Subscribers A (no linger) and B (a
// long one) on one connection wait on one channel. B's waiter leaves and
// B's subscription lingers; then A's leaves, and A unsubscribes the
// channel and its inbox, which ends B's Receive too. B lets the channel
// go, and its inbox with it: nothing stays subscribed on the server.
func TestSharedConnectionLeavesNoInbox(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			node := redistest.Shared(t)
			rc := node.Client(t)
			e := &env{sharded: sharded, node: node, rc: rc, admin: node.Client(t)}
			a := New(rc, sharded, 0, nil, "sub-a")
			b := New(rc, sharded, 3*time.Second, nil, "sub-b")
			ch := channelName(t, "{unlock}")
			ctx, cancel := context.WithTimeout(t.Context(), wakeWithin)
			defer cancel()
			wa, err := a.Subscribe(ctx, ch)
			require.NoError(t, err)
			wb, err := b.Subscribe(ctx, ch)
			require.NoError(t, err)
			wb.Done(false) // B lingers
			wa.Done(false) // A unsubscribes
			require.Eventually(t, func() bool { return a.Channels() == 0 && b.Channels() == 0 }, 2*time.Second, 5*time.Millisecond,
				"both Subscribers let the channel go (B within its linger: its Receive was ended under it)")
			require.EqualValues(t, 0, e.numsub(t, ch), "the channel")
			require.EqualValues(t, 0, e.numsub(t, Inbox(ch, "sub-a")), "A's inbox")
			require.EqualValues(t, 0, e.numsub(t, Inbox(ch, "sub-b")), "B's inbox, before either Subscriber closed")
			require.NoError(t, a.Close())
			require.NoError(t, b.Close())
		})
	}
}

// TestSharedConnectionChurn: four Subscribers on one connection, three
// goroutines each, subscribe to three channels at random and leave at
// once, 150 times each, with no linger, so that their subscriptions end
// one another's all the time. Every Subscribe succeeds, and once every
// Subscriber has let its channels go, nothing stays subscribed on the
// server: neither a channel nor an inbox.
func TestSharedConnectionChurn(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	rc := node.Client(t)
	admin := node.Client(t)
	subs := make([]*Subscriber, 4)
	for i := range subs {
		subs[i] = New(rc, false, 0, nil, fmt.Sprintf("sub%d", i))
	}
	var wg sync.WaitGroup
	for i, s := range subs {
		for g := range 3 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), uint64(g)))
				for r := range 150 {
					ctx, cancel := context.WithTimeout(t.Context(), wakeWithin)
					w, err := s.Subscribe(ctx, fmt.Sprintf("churn:{c%d}", rng.IntN(3)))
					cancel()
					if !assert.NoError(t, err, "Subscriber %d, round %d", i, r) {
						continue
					}
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // a short wait, at random
					w.Done(false)
				}
			})
		}
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		for _, s := range subs {
			if s.Channels() != 0 {
				return false
			}
		}
		return true
	}, wakeWithin, 10*time.Millisecond, "the Subscribers still hold channels")
	require.Eventually(t, func() bool {
		names, err := admin.Do(t.Context(), admin.B().PubsubChannels().Pattern("churn:*").Build()).AsStrSlice()
		return err == nil && len(names) == 0
	}, wakeWithin, 10*time.Millisecond, "subscribed on the server though every Subscriber let its channels go")
	for _, s := range subs {
		require.NoError(t, s.Close())
	}
}

// TestSharedConnectionQuiet: ten Subscribers on one connection, one waiter
// each on one channel. Each SUBSCRIBE of the channel is confirmed to every
// Receive on the connection that listens there; taken as the Subscriber's
// own confirmation, it counted as the subscription made again, woke every
// waiter and, at the eighth, was remade, whose UNSUBSCRIBE ended everyone's
// Receive: thousands of SUBSCRIBEs a second without end. Once all are
// subscribed, nothing is sent and nobody is woken.
func TestSharedConnectionQuiet(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	rc := node.Client(t)
	admin := node.Client(t)
	ch := channelName(t, "{unlock}")
	waiters := make([]*Waiter, 10)
	for i := range waiters {
		s := New(rc, false, 0, nil, fmt.Sprintf("sub%d", i))
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		w, err := s.Subscribe(t.Context(), ch)
		require.NoError(t, err)
		waiters[i] = w
	}
	time.Sleep(quietFor) // what the last Subscribe set off, if anything
	for _, w := range waiters {
		woken(w)
	}
	before := redistest.ReadStats(t, admin).Calls
	requireQuiet(t, waiters...)
	after := redistest.ReadStats(t, admin).Calls
	assert.Equal(t, before["subscribe"], after["subscribe"], "SUBSCRIBEs while nothing changed")
	assert.Equal(t, before["unsubscribe"], after["unsubscribe"], "UNSUBSCRIBEs while nothing changed")
	for _, w := range waiters {
		w.Done(false)
	}
}

// TestSharedConnectionAbandonedSubscribe: Subscribers A and B on one
// connection. A's waiter leaves as B's arrives, for a short while only:
// A's UNSUBSCRIBE, answered first, ends B's Receive before Redis has run
// B's SUBSCRIBE, which then subscribes the channel again, and B's waiter
// gives up. Once both have let the channel go, the server has no
// subscription left, round after round.
func TestSharedConnectionAbandonedSubscribe(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	rc := node.Client(t)
	e := &env{node: node, rc: rc, admin: node.Client(t)}
	a := New(rc, false, 0, nil, "sub-a")
	b := New(rc, false, 0, nil, "sub-b")
	t.Cleanup(func() {
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
	ch := channelName(t, "{unlock}")
	rng := rand.New(rand.NewPCG(1, 2))
	for r := range 300 {
		wa, err := a.Subscribe(t.Context(), ch)
		require.NoError(t, err)
		bctx, cancel := context.WithTimeout(t.Context(), time.Millisecond+time.Duration(rng.IntN(8000))*time.Microsecond)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if w, err := b.Subscribe(bctx, ch); err == nil {
				w.Done(false)
			}
		}()
		time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		wa.Done(false)
		<-done
		cancel()
		require.Eventually(t, func() bool { return a.Channels() == 0 && b.Channels() == 0 }, wakeWithin, time.Millisecond, "round %d: both let the channel go", r)
		for _, name := range []string{ch, Inbox(ch, "sub-a"), Inbox(ch, "sub-b")} {
			require.Zero(t, e.numsub(t, name), "round %d: %s still subscribed", r, name)
		}
	}
}
