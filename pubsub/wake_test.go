package pubsub

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestPublishWakesOneInOrder: a message published after Subscribe returns
// wakes exactly one waiter, the longest-waiting one.
func TestPublishWakesOneInOrder(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, b, c := e.subscribe(t, ch), e.subscribe(t, ch), e.subscribe(t, ch)

		require.EqualValues(t, 1, e.publish(t, ch), "one shared subscription receives the message")
		requireWoken(t, a, "first in line")
		requireQuiet(t, b, c)

		a.Done(true)
		e.publish(t, ch)
		requireWoken(t, b, "second in line, once the first took the lock")
		requireQuiet(t, c)

		b.Done(true)
		e.publish(t, ch)
		requireWoken(t, c, "third in line")
	})
}

// TestWakeAllWakesEveryWaiter: the message WakeAll wakes every waiter, and
// each that leaves without the resource hands nothing more on.
func TestWakeAllWakesEveryWaiter(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, b, c := e.subscribe(t, ch), e.subscribe(t, ch), e.subscribe(t, ch)

		e.publishMessage(t, ch, WakeAll)
		requireWoken(t, a)
		requireWoken(t, b)
		requireWoken(t, c)

		e.publish(t, ch)
		requireWoken(t, a, "an ordinary message after it wakes one again")
		requireQuiet(t, b, c)
	})
}

// TestPendingWakeIsSkipped: a message passes over a waiter whose wake-up is
// still pending, so two quick unlocks make two waiters re-check.
func TestPendingWakeIsSkipped(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, b, c := e.subscribe(t, ch), e.subscribe(t, ch), e.subscribe(t, ch)

		e.publish(t, ch)
		e.publish(t, ch)
		require.Eventually(t, func() bool { return len(b.Wake()) == 1 }, wakeWithin, 5*time.Millisecond,
			"the second message skips the first waiter, which has one pending")
		require.True(t, woken(a))
		requireQuiet(t, c)
	})
}

// TestWakeIsHandedOn: a waiter that a message woke but that leaves without
// the lock passes the wake-up to the next waiter; one that took the lock, or
// that no message woke, does not.
func TestWakeIsHandedOn(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, b := e.subscribe(t, ch), e.subscribe(t, ch)

		e.publish(t, ch)
		requireWoken(t, a)
		requireQuiet(t, b)
		a.Done(false) // it took the wake-up, then timed out before the lock
		require.True(t, woken(b), "the wake-up was handed on to the next waiter")
		a.Done(false)
		requireQuiet(t, b) // a second Done does nothing

		c := e.subscribe(t, ch)
		b.Done(true)
		require.False(t, woken(c), "a waiter that took the lock hands nothing on")

		d := e.subscribe(t, ch)
		c.Done(false)
		require.False(t, woken(d), "a waiter no message woke hands nothing on")

		// An untaken wake-up is handed on just the same.
		e.publish(t, ch)
		f := e.subscribe(t, ch)
		require.Eventually(t, func() bool { return len(d.Wake()) == 1 }, wakeWithin, 5*time.Millisecond)
		d.Done(false)
		require.True(t, woken(f))
	})
}

// TestResubscribeWakesAll: when the subscribing connection is killed, the
// subscription is made again and every waiter is woken, since a message may
// have been lost meanwhile; later messages wake one waiter again. rueidis
// makes the subscription again inside Receive; with its retries disabled,
// Receive returns and the Subscriber makes it again.
func TestResubscribeWakesAll(t *testing.T) {
	forEachMode(t, true, func(t *testing.T, e *env) {
		t.Run("rueidis resubscribes", func(t *testing.T) { testResubscribe(t, e) })
		t.Run("Receive returns", func(t *testing.T) {
			opt := redistest.ClientOption(e.node.Addr())
			opt.DisableRetry = true
			rc, err := rueidis.NewClient(opt)
			require.NoError(t, err)
			t.Cleanup(rc.Close)
			testResubscribe(t, newEnv(t, e.node, e.sharded, rc))
		})
	})
}

func testResubscribe(t *testing.T, e *env) {
	ch := channelName(t, "unlock")
	a, b, c := e.subscribe(t, ch), e.subscribe(t, ch), e.subscribe(t, ch)

	ids := e.subscribedClients(t)
	require.Len(t, ids, 1, "the Subscriber subscribes over one connection")
	require.NoError(t, e.admin.Do(t.Context(), e.admin.B().ClientKill().Id(ids[0]).Build()).Error())

	for _, w := range []*Waiter{a, b, c} {
		requireWoken(t, w, "every waiter re-checks after the resubscribe")
	}
	require.EqualValues(t, 1, e.numsub(t, ch), "subscribed again before waking anyone")
	require.NotContains(t, e.subscribedClients(t), ids[0])

	require.EqualValues(t, 1, e.publish(t, ch))
	requireWoken(t, a)
	requireQuiet(t, b, c)

	for _, w := range []*Waiter{a, b, c} {
		w.Done(false)
	}
	e.requireGone(t, ch)
}
