package pubsub

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddressedWakesItsWaiters: a message addressed to a tag wakes the
// waiters of that tag, wherever they stand in the queue, hands them its
// note, and wakes nobody else; one addressed to a tag nobody here has does
// nothing, and leaving after it hands no wake-up on.
func TestAddressedWakesItsWaiters(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		plain := e.subscribe(t, ch)
		a, err := e.subs.SubscribeAs(context.Background(), ch, "a")
		require.NoError(t, err)
		t.Cleanup(func() { a.Done(false) })
		b, err := e.subs.SubscribeAs(context.Background(), ch, "b")
		require.NoError(t, err)
		t.Cleanup(func() { b.Done(false) })

		note, ok := b.Note()
		require.False(t, ok, "no note before a message: %q", note)
		e.publishMessage(t, ch, Addressed+"b 7 42")
		requireWoken(t, b, "the waiter the message names")
		requireQuiet(t, plain, a)
		note, ok = b.Note()
		require.True(t, ok)
		require.Equal(t, "7 42", note, "the note is the message after the tag")
		_, ok = b.Note()
		require.False(t, ok, "a note is taken once")

		e.publishMessage(t, ch, Addressed+"elsewhere 1")
		requireQuiet(t, plain, a, b)

		b.Done(false)
		requireQuiet(t, plain, a)
		e.publish(t, ch)
		requireWoken(t, plain, "an ordinary message still wakes the longest waiting")
		requireQuiet(t, a)
	})
}
