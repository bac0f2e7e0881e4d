package pubsub

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDoneReportsWhatIsOwed pins what Done tells the waiter that leaves:
//   - a waiter that took the lock is not the last to owe anything, unless
//     one left before it without the lock while it still waited: that
//     one's refusal may have recorded the Subscriber in the publisher's
//     record after this one's grant took it out, and the last one to leave
//     takes it back;
//   - a waiter named by a tag is told whether it was the last of its tag
//     (one owner's calls share what Redis keeps for the owner);
//   - a waiter that took the lock with a wake-up still pending, handed to
//     it while its attempt was under way, passes it on.
func TestDoneReportsWhatIsOwed(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")

		only := e.subscribe(t, ch)
		require.False(t, only.Done(true), "the only waiter took the lock: nothing owed")

		a, b := e.subscribe(t, ch), e.subscribe(t, ch)
		require.False(t, a.Done(false), "a gives up while b waits: not the last")
		require.True(t, b.Done(true), "b, the last, took the lock after a gave up beside it: it is told")

		c, d := e.subscribe(t, ch), e.subscribe(t, ch)
		require.False(t, c.Done(true), "c took the lock while d waits")
		require.True(t, d.Done(false), "d gives up, last")

		x1, err := e.subs.SubscribeAs(context.Background(), ch, "x")
		require.NoError(t, err)
		x2, err := e.subs.SubscribeAs(context.Background(), ch, "x")
		require.NoError(t, err)
		y, err := e.subs.SubscribeAs(context.Background(), ch, "y")
		require.NoError(t, err)
		require.False(t, x1.Done(false), "another waiter of tag x is left")
		require.True(t, x2.Done(false), "the last of tag x, with a waiter of tag y left")
		require.True(t, y.Done(false))

		taker, next := e.subscribe(t, ch), e.subscribe(t, ch)
		require.EqualValues(t, 1, e.publish(t, ch), "one release")
		requireWoken(t, taker, "the release wakes the waiter longest there")
		require.EqualValues(t, 1, e.publish(t, ch), "a second release while taker's attempt is under way")
		requireQuiet(t, next)
		taker.Done(true)
		requireWoken(t, next, "the wake-up taker did not use goes on")
		next.Done(true)
	})
}
