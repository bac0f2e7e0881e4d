package pubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestLingerKeepsSubscription: a channel whose last waiter left stays
// subscribed for the linger, so that a waiter that comes back within it is
// ready at once, with no new SUBSCRIBE, and is woken by what is published
// after; a message meanwhile wakes nobody and breaks nothing; the
// subscription ends once the linger has passed with no waiter, and Close
// ends a lingering one at once.
func TestLingerKeepsSubscription(t *testing.T) {
	const linger = 400 * time.Millisecond
	forEachMode(t, true, func(t *testing.T, e *env) {
		e.subs = New(e.rc, e.sharded, linger, nil, envID)
		t.Cleanup(func() { require.NoError(t, e.subs.Close()) })
		ch := channelName(t, "unlock")
		subscribes := func() int64 {
			calls := redistest.ReadStats(t, e.admin).Calls
			return calls["subscribe"] + calls["ssubscribe"]
		}

		require.True(t, e.subscribe(t, ch).Done(true), "the channel's only waiter is its last")
		before := subscribes()
		require.True(t, e.subs.Waiting(ch), "a lingering channel counts as waited on")
		require.EqualValues(t, 1, e.numsub(t, ch), "the subscription lingers")
		require.EqualValues(t, 1, e.publish(t, ch), "a message with no waiter is received and dropped")

		w := e.subscribe(t, ch)
		require.Equal(t, before, subscribes(), "a waiter within the linger subscribed nothing")
		require.EqualValues(t, 1, e.publish(t, ch))
		requireWoken(t, w, "the waiter that came back is woken")
		w.Done(true)

		start := time.Now()
		e.requireGone(t, ch)
		require.GreaterOrEqual(t, time.Since(start), linger/2, "the subscription outlived its last waiter")
		require.False(t, e.subs.Waiting(ch))

		other := channelName(t, "closed")
		e.subscribe(t, other).Done(false)
		require.EqualValues(t, 1, e.numsub(t, other), "the subscription lingers")
		require.NoError(t, e.subs.Close())
		require.Zero(t, e.subs.Channels())
		require.Zero(t, e.numsub(t, other), "Close ended the lingering subscription before it returned")
	})
}
