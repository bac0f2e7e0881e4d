package pubsub

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
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

		require.True(t, e.subscribe(t, ch).Done(false), "the channel's only waiter is its last")
		before := subscribes()
		require.True(t, e.subs.Waiting([]byte(ch)), "a lingering channel counts as waited on")
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
		require.False(t, e.subs.Waiting([]byte(ch)))

		other := channelName(t, "closed")
		e.subscribe(t, other).Done(false)
		require.EqualValues(t, 1, e.numsub(t, other), "the subscription lingers")
		require.NoError(t, e.subs.Close())
		require.Zero(t, e.subs.Channels())
		require.Zero(t, e.numsub(t, other), "Close ended the lingering subscription before it returned")
	})
}

// TestLingerSurvivesConnectionLoss: a lingering subscription whose
// connection is killed is made again or given up, and either way a waiter
// that comes back afterwards is woken by what is published once its
// Subscribe returned; nothing outlives the linger. Both with rueidis
// resubscribing inside Receive and with Receive returning.
func TestLingerSurvivesConnectionLoss(t *testing.T) {
	const linger = 300 * time.Millisecond
	forEachMode(t, true, func(t *testing.T, e *env) {
		for _, retry := range []bool{true, false} {
			t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
				opt := redistest.ClientOption(e.node.Addr())
				opt.DisableRetry = !retry
				rc, err := rueidis.NewClient(opt)
				require.NoError(t, err)
				t.Cleanup(rc.Close)
				le := newEnv(t, e.node, e.sharded, rc)
				le.subs = New(rc, e.sharded, linger, nil, envID)
				t.Cleanup(func() { require.NoError(t, le.subs.Close()) })
				ch := channelName(t, "unlock")

				le.subscribe(t, ch).Done(true)
				ids := le.subscribedClients(t)
				require.Len(t, ids, 1, "the subscription lingers on one connection")
				require.NoError(t, le.admin.Do(t.Context(), le.admin.B().ClientKill().Id(ids[0]).Build()).Error())

				w := le.subscribe(t, ch)
				require.Eventually(t, func() bool { return le.numsub(t, ch) == 1 }, wakeWithin, 5*time.Millisecond,
					"the waiter that came back is subscribed")
				require.EqualValues(t, 1, le.publish(t, ch))
				requireWoken(t, w, "the waiter that came back is woken")
				w.Done(true)
				le.requireGone(t, ch)
			})
		}
	})
}
