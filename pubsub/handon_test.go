package pubsub

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/internal/redistest"
)

// TestHandOnWithOnlyUnconfirmedWaitersReportsLast: waiter A, woken by a
// message addressed to its Subscriber, gives up while the only other
// waiter, B, is still inside Subscribe waiting for the confirmation of a
// new subscription attempt (the previous one was lost). B cannot take the
// wake-up A hands on, and its Subscribe may fail (here its ctx ends), so
// A's Done must report that A was the last ready waiter: the caller
// (rlock's waitParked) then passes the '@<id>' wake-up on through Redis
// rather than lose it.
func TestHandOnWithOnlyUnconfirmedWaitersReportsLast(t *testing.T) {
	node := redistest.Shared(t)
	if !node.Controllable() {
		t.Skip("needs a controllable Redis")
	}
	proxy := node.Proxy(t)
	opt := redistest.ClientOption(proxy.Addr())
	opt.DisableRetry = true // Receive returns on a connection loss: a new, unconfirmed attempt follows
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	e := &env{node: node, rc: rc, admin: node.Client(t)}
	e.subs = New(rc, false, 0, nil, envID)
	t.Cleanup(func() {
		proxy.Heal()
		require.NoError(t, e.subs.Close())
	})
	ch := channelName(t, "unlock")

	a := e.subscribe(t, ch)
	require.EqualValues(t, 1, e.publishMessage(t, ch, Addressed+envID))
	requireWoken(t, a, "the message addressed to the Subscriber wakes its only waiter")

	// Lose the subscription, and keep the next attempt from being confirmed.
	proxy.Cut()
	proxy.Reset()
	e.subs.mu.Lock()
	c := e.subs.channels[ch]
	e.subs.mu.Unlock()
	require.NotNil(t, c)
	require.Eventually(t, func() bool {
		e.subs.mu.Lock()
		defer e.subs.mu.Unlock()
		return c.current == nil || !c.current.confirmed
	}, wakeWithin, time.Millisecond, "the lost subscription is noticed")

	bctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	berr := make(chan error, 1)
	go func() {
		w, err := e.subs.Subscribe(bctx, ch)
		if w != nil {
			w.Done(false)
		}
		berr <- err
	}()
	require.Eventually(t, func() bool {
		e.subs.mu.Lock()
		defer e.subs.mu.Unlock()
		return len(c.waiters) == 2
	}, wakeWithin, time.Millisecond, "B waits in Subscribe")

	lastA := a.Done(false) // A gave up without the lock
	require.Error(t, <-berr, "B's Subscribe fails: its ctx ended before a confirmation")

	require.True(t, lastA,
		"A handed its wake-up on to B, which never became a waiter: the wake-up is lost, and no Done reported last")
}

// TestStaleTimerLeavesRearmedWaiterAsleep: a WakeAfter that replaces an
// arrangement whose timer has just fired (the Clock took the waiter out,
// and timeUp waits for the Subscriber's lock) is honoured: timeUp sees
// that WakeAfter armed the waiter again and leaves it asleep. The test
// holds the Subscriber's lock to make the window (any contention on s.mu)
// certain, and runs WakeAfter's body inline.
func TestStaleTimerLeavesRearmedWaiterAsleep(t *testing.T) {
	node := redistest.Shared(t)
	e := newEnv(t, node, false, node.Client(t))
	w := e.subscribe(t, channelName(t, "unlock"))

	w.WakeAfter(30 * time.Millisecond)
	e.subs.mu.Lock()
	// The timer fires: the Clock takes w out and calls timeUp, which waits
	// for s.mu.
	require.Eventually(t, func() bool { return e.subs.wakeups.Len() == 0 }, wakeWithin, time.Millisecond)
	// WakeAfter(time.Hour) gets s.mu first: its body, inline, since the
	// test holds the lock.
	w.by = 0
	w.arm(alarm.Now() + time.Hour)
	e.subs.mu.Unlock()
	requireQuiet(t, w)
}
