package pubsub

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestAddressedToSubscriber: a message addressed to the Subscriber's own
// id wakes one waiter, the longest waiting, as an unaddressed message
// does; one addressed to another Subscriber's id wakes nobody. A waiter it
// woke that leaves without the lock hands the wake-up on to the next, and
// the last waiter to leave is told so by Done.
func TestAddressedToSubscriber(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, b := e.subscribe(t, ch), e.subscribe(t, ch)

		e.publishMessage(t, ch, Addressed+"another-subscriber")
		requireQuiet(t, a, b)
		e.publishMessage(t, ch, Addressed+envID)
		requireWoken(t, a, "the longest waiting, by a message addressed to its Subscriber")
		requireQuiet(t, b)

		require.False(t, a.Done(false), "a leaves while b waits: not the last")
		requireWoken(t, b, "the wake-up a did not use")
		require.True(t, b.Done(false), "b is the channel's last waiter")
		require.False(t, b.Done(false), "a second Done reports nothing")
	})
}

// TestDeadlineSetsTime: "@<tag> next <ms>" wakes nobody at once and hands
// no note: it brings the named waiters' wake-up forward to ms from its
// arrival, whether they sleep (an armed WakeAfter) or are awake (their
// next WakeAfter); others keep theirs.
func TestDeadlineSetsTime(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, err := e.subs.SubscribeAs(context.Background(), ch, "a")
		require.NoError(t, err)
		t.Cleanup(func() { a.Done(false) })
		b, err := e.subs.SubscribeAs(context.Background(), ch, "b")
		require.NoError(t, err)
		t.Cleanup(func() { b.Done(false) })
		a.WakeAfter(time.Hour)
		b.WakeAfter(time.Hour)

		later := quietFor.Milliseconds() + 200
		e.publishMessage(t, ch, Addressed+"a "+Deadline+strconv.FormatInt(later, 10))
		start := time.Now()
		requireQuiet(t, a, b) // for quietFor: not at once
		requireWoken(t, a, "a, by its deadline")
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, quietFor, "a slept until its deadline")
		_, noted := a.Note()
		assert.False(t, noted, "a deadline is no note")
		requireQuiet(t, b)

		// a is awake: the deadline caps its next sleep. One subscription
		// hands messages on in order: once the marker's waiter is woken,
		// the deadline before it has been handled.
		m, err := e.subs.SubscribeAs(context.Background(), ch, "marker")
		require.NoError(t, err)
		t.Cleanup(func() { m.Done(false) })
		e.publishMessage(t, ch, Addressed+"a "+Deadline+"0")
		e.publishMessage(t, ch, Addressed+"marker 1")
		requireWoken(t, m, "the marker's waiter")
		a.WakeAfter(time.Hour)
		requireWoken(t, a, "a, by the deadline that came while it was awake")
	})
}

// TestInboxReachesOneSubscriber: a message addressed to a Subscriber and
// published on its inbox for a channel reaches that Subscriber alone (one
// connection receives it, where every Subscriber with waiters receives a
// message on the channel) and wakes one of its waiters, as it would on the
// channel; a waiter of another Subscriber on the same channel sleeps on.
// The inbox goes with the channel's subscription.
func TestInboxReachesOneSubscriber(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "{unlock}")
		other := New(e.node.Client(t), e.sharded, 0, nil, "another-subscriber")
		t.Cleanup(func() { require.NoError(t, other.Close()) })
		theirs, err := other.Subscribe(t.Context(), ch)
		require.NoError(t, err)
		a, b := e.subscribe(t, ch), e.subscribe(t, ch)

		require.EqualValues(t, 1, e.publishMessage(t, Inbox(ch, envID), Addressed+envID), "one connection receives it")
		requireWoken(t, a, "the longest waiting, by a message on its Subscriber's inbox")
		requireQuiet(t, b, theirs)
		require.EqualValues(t, 1, e.publishMessage(t, Inbox(ch, "another-subscriber"), Addressed+"another-subscriber"))
		requireWoken(t, theirs, "the other Subscriber's waiter, by its own inbox")
		requireQuiet(t, b)
		require.EqualValues(t, 2, e.publish(t, ch), "both Subscribers hear the channel")

		a.Done(false)
		b.Done(false)
		theirs.Done(false)
		e.requireGone(t, ch, Inbox(ch, envID), Inbox(ch, "another-subscriber"))
	})
}
