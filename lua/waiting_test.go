package lua_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/pubsub"
)

// TestReleaseWakesOneClient: a refused acquire that waits records its
// Client (the owner field's part before ':'), once, in the order the
// Clients began to wait; the release that frees the lock addresses the
// Client longest waiting ('@<clientID>'), and only it; a waiter that takes
// the lock leaves the record; with nobody recorded, a marked lock's
// release wakes every Client ('unlocked'). An owner that takes the lock
// while Clients are recorded marks it, so that its release wakes them.
func TestReleaseWakesOneClient(t *testing.T) {
	rc, k, messages := listenedLock(t)

	require.Equal(t, lua.Granted, lua.Code(call{owner: "H:1", seq: 1, count: 1}.acquire(t, rc, k)[0]))
	for _, c := range []call{
		{owner: "A:1", seq: 1, count: 1, waiting: true},
		{owner: "B:1", seq: 1, count: 1, waiting: true},
		{owner: "A:2", seq: 2, count: 1, waiting: true}, // A is there: it keeps its place
		{owner: "C:1", seq: 1, count: 1},                // C does not wait: not recorded
	} {
		require.Equal(t, lua.Refused, lua.Code(c.acquire(t, rc, k)[0]), "%s is refused", c.owner)
	}
	assert.Equal(t, []string{"A", "B"}, waitingClients(t, rc, k))

	require.Equal(t, reply(lua.Freed, 0), call{owner: "H:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@A", next(t, messages), "the Client longest waiting, alone")
	assert.Equal(t, []string{"B"}, waitingClients(t, rc, k))

	require.Equal(t, lua.Granted, lua.Code(call{owner: "A:1", seq: 3, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	require.Equal(t, reply(lua.Freed, 0), call{owner: "A:1", seq: 4, count: 0}.release(t, rc, k))
	assert.Equal(t, "@B", next(t, messages))
	assert.Empty(t, waitingClients(t, rc, k))

	require.Equal(t, lua.Granted, lua.Code(call{owner: "B:1", seq: 2, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	require.Equal(t, reply(lua.Freed, 0), call{owner: "B:1", seq: 3, count: 0}.release(t, rc, k))
	assert.Equal(t, "unlocked", next(t, messages), "a waiter held it, and nobody is recorded: every Client is told")

	// An owner that does not wait takes the free lock while D is recorded:
	// its release still wakes D.
	require.Equal(t, lua.Granted, lua.Code(call{owner: "H:1", seq: 3, count: 1}.acquire(t, rc, k)[0]))
	require.Equal(t, lua.Refused, lua.Code(call{owner: "D:1", seq: 1, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	require.Equal(t, reply(lua.Freed, 0), call{owner: "H:1", seq: 4, count: 0}.release(t, rc, k))
	assert.Equal(t, "@D", next(t, messages))
	require.Equal(t, lua.Granted, lua.Code(call{owner: "E:1", seq: 1, count: 1}.acquire(t, rc, k)[0]), "E takes the lock before D asks")
	require.Equal(t, lua.Refused, lua.Code(call{owner: "D:1", seq: 2, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	require.Equal(t, reply(lua.Freed, 0), call{owner: "E:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@D", next(t, messages), "D, refused again, is woken by E's release")
	assertNoMessage(t, rc, k, messages)
}

// TestOwnerPassingByMarks: an owner that takes the free lock while Clients
// are recorded as waiting (one was woken, and has not asked yet) marks
// it, so that its release wakes the next Client.
func TestOwnerPassingByMarks(t *testing.T) {
	rc, k, messages := listenedLock(t)

	heldWithWaiters(t, rc, k, "A:1", "B:1")
	require.Equal(t, reply(lua.Freed, 0), call{owner: "H:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@A", next(t, messages))
	require.Equal(t, lua.Granted, lua.Code(call{owner: "X:1", seq: 1, count: 1}.acquire(t, rc, k)[0]), "X passes A by")
	require.Equal(t, reply(lua.Freed, 0), call{owner: "X:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@B", next(t, messages), "X's release wakes the next Client")
	assertNoMessage(t, rc, k, messages)
}

// TestWokenClientKeepsItsPlace: a Client woken by a release whose waiter
// then loses the lock to an owner passing by is refused back into its old
// place, ahead of the Clients recorded after it, so the next release wakes
// it again; a woken Client that never asks again (its process died) is not
// woken twice.
func TestWokenClientKeepsItsPlace(t *testing.T) {
	rc, k, messages := listenedLock(t)

	heldWithWaiters(t, rc, k, "A:1", "B:1", "D:1")
	require.Equal(t, reply(lua.Freed, 0), call{owner: "H:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@A", next(t, messages))
	require.Equal(t, lua.Granted, lua.Code(call{owner: "X:1", seq: 1, count: 1}.acquire(t, rc, k)[0]), "X passes A by")
	require.Equal(t, lua.Refused, lua.Code(call{owner: "A:1", seq: 2, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	assert.Equal(t, []string{"A", "B", "D"}, waitingClients(t, rc, k), "A is back in its place")
	require.Equal(t, reply(lua.Freed, 0), call{owner: "X:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@A", next(t, messages), "A again, not B")

	// A dies without asking again: the next releases wake B, then D.
	require.Equal(t, lua.Granted, lua.Code(call{owner: "Y:1", seq: 1, count: 1}.acquire(t, rc, k)[0]))
	require.Equal(t, reply(lua.Freed, 0), call{owner: "Y:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@B", next(t, messages), "a dead Client is woken once")
	require.Equal(t, lua.Granted, lua.Code(call{owner: "Y:1", seq: 3, count: 1}.acquire(t, rc, k)[0]))
	require.Equal(t, reply(lua.Freed, 0), call{owner: "Y:1", seq: 4, count: 0}.release(t, rc, k))
	assert.Equal(t, "@D", next(t, messages))
	assertNoMessage(t, rc, k, messages)
}

// TestWithdrawPassesWakeOn: a Client whose last waiter gives up leaves the
// record. If a release took it out to wake it and the lock is still free,
// the wake-up goes on to the next Client recorded; if it was still
// recorded, nobody is woken.
func TestWithdrawPassesWakeOn(t *testing.T) {
	rc, k, messages := listenedLock(t)

	heldWithWaiters(t, rc, k, "A:1", "B:1", "C:1")
	require.Equal(t, reply(lua.NotHeld, 0), call{owner: "C:1", seq: 2, leaving: true}.release(t, rc, k), "C gives up while recorded")
	assert.Equal(t, []string{"A", "B"}, waitingClients(t, rc, k))
	assertNoMessage(t, rc, k, messages)

	require.Equal(t, reply(lua.Freed, 0), call{owner: "H:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@A", next(t, messages))
	require.Equal(t, reply(lua.NotHeld, 0), call{owner: "A:1", seq: 2, leaving: true}.release(t, rc, k), "A gives up after its wake-up")
	assert.Equal(t, "@B", next(t, messages), "A's wake-up goes on to B")
	assert.Empty(t, waitingClients(t, rc, k))
	assertNoMessage(t, rc, k, messages)
}

// TestWithdrawWithNobodyRecordedWakesEveryClient: a Client leaves the
// record when one of its waiters takes the lock, though others of its
// waiters may still sleep. When a woken Client then gives up and nobody is
// left in the record to pass its wake-up to, every Client is told, as a
// release with nobody recorded tells them: C's second waiter must not
// sleep until its timer while the lock is free.
func TestWithdrawWithNobodyRecordedWakesEveryClient(t *testing.T) {
	rc, k, messages := listenedLock(t)

	heldWithWaiters(t, rc, k, "C:1", "C:2", "X:1")
	require.Equal(t, reply(lua.Freed, 0), call{owner: "H:1", seq: 2, count: 0}.release(t, rc, k))
	assert.Equal(t, "@C", next(t, messages))
	require.Equal(t, lua.Granted, lua.Code(call{owner: "C:1", seq: 2, count: 1, waiting: true}.acquire(t, rc, k)[0]), "C's first waiter takes it")
	assert.Equal(t, []string{"X"}, waitingClients(t, rc, k), "C left the record; its second waiter still sleeps")
	require.Equal(t, reply(lua.Freed, 0), call{owner: "C:1", seq: 3, count: 0}.release(t, rc, k))
	assert.Equal(t, "@X", next(t, messages))
	require.Equal(t, reply(lua.NotHeld, 0), call{owner: "X:1", seq: 2, leaving: true}.release(t, rc, k), "X gives up after its wake-up")
	assert.Equal(t, "unlocked", next(t, messages), "nobody recorded to pass it to: every Client is told")
	assertNoMessage(t, rc, k, messages)
}

// TestLateWithdrawIsStale: a Client's withdrawal whose reply was lost is
// sent again and applies; a copy of the first that arrives after another
// waiter of the Client was recorded again is stale and takes nobody out of
// the record.
func TestLateWithdrawIsStale(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	heldWithWaiters(t, rc, k, "C:1")
	lost := call{owner: "C:1", seq: 2, leaving: true}
	require.Equal(t, reply(lua.NotHeld, 0), call{owner: "C:1", seq: 3, superseded: 2, leaving: true}.release(t, rc, k), "the resend")
	assert.Empty(t, waitingClients(t, rc, k))
	require.Equal(t, lua.Refused, lua.Code(call{owner: "C:2", seq: 1, count: 1, waiting: true}.acquire(t, rc, k)[0]), "another waiter of C")
	assert.Equal(t, reply(lua.Stale, 0), lost.release(t, rc, k), "the copy that arrives late")
	assert.Equal(t, []string{"C"}, waitingClients(t, rc, k), "C still waits")
}

// TestHandOverBoundedWhileOthersWait: a release that names a waiter of its
// own Client as heir hands the lock to it as often as it likes while no
// other Client waits; once another Client is recorded as waiting, the
// Client passes the lock among its waiters 8 more times (maxPasses in
// release.lua), with no message, and the release after that frees the
// lock and wakes that Client. The count starts again with every holder
// that takes the lock from a release that freed it.
func TestHandOverBoundedWhileOthersWait(t *testing.T) {
	rc, k, messages := listenedLock(t)

	holder := 0 // A:<holder> holds the lock under seq 1
	release := func() lua.Code {
		t.Helper()
		r := call{owner: fmt.Sprintf("A:%d", holder), seq: 2, heir: fmt.Sprintf("A:%d", holder+1), heirSeq: 1}.release(t, rc, k)
		holder++
		return lua.Code(r[0])
	}
	require.Equal(t, lua.Granted, lua.Code(call{owner: "A:0", seq: 1, count: 1}.acquire(t, rc, k)[0]))
	for range 20 {
		require.Equal(t, lua.Handed, release(), "nobody else waits: A:%d hands over", holder)
	}
	for round := range 2 {
		require.Equal(t, lua.Refused, lua.Code(call{owner: "B:1", seq: 1 + 3*round, count: 1, waiting: true}.acquire(t, rc, k)[0]))
		for i := range 8 {
			require.Equal(t, lua.Handed, release(), "round %d: hand-over %d while B waits", round, i+1)
		}
		assertNoMessage(t, rc, k, messages)
		require.Equal(t, lua.Freed, release(), "round %d: the ninth release while B waits frees the lock", round)
		assert.Equal(t, "@B", next(t, messages))
		assert.Equal(t, []string{"A"}, waitingClients(t, rc, k), "round %d: A, whose heir was not handed the lock, waits behind B", round)
		require.Equal(t, lua.Granted, lua.Code(call{owner: "B:1", seq: 2 + 3*round, count: 1, waiting: true}.acquire(t, rc, k)[0]))
		require.Equal(t, lua.Refused, lua.Code(call{owner: fmt.Sprintf("A:%d", holder), seq: 1, count: 1, waiting: true}.acquire(t, rc, k)[0]))
		require.Equal(t, reply(lua.Freed, 0), call{owner: "B:1", seq: 3 + 3*round, count: 0}.release(t, rc, k))
		assert.Equal(t, "@A", next(t, messages))
		require.Equal(t, lua.Granted, lua.Code(call{owner: fmt.Sprintf("A:%d", holder), seq: 1, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	}
}

// listenedLock returns a client of the shared Redis, a lock's keys, and
// the messages on the lock's channel from now on.
func listenedLock(t *testing.T) (rueidis.Client, keys.Keys, <-chan string) {
	t.Helper()
	node := redistest.Shared(t)
	k := lockKeys(t)
	return node.Client(t), k, listen(t, node, k.Channel)
}

// heldWithWaiters has H:1 take k's lock and each of owners be refused as
// a waiter, so that their Clients are recorded in that order.
func heldWithWaiters(t *testing.T, rc rueidis.Client, k keys.Keys, owners ...string) {
	t.Helper()
	require.Equal(t, lua.Granted, lua.Code(call{owner: "H:1", seq: 1, count: 1}.acquire(t, rc, k)[0]))
	for _, o := range owners {
		require.Equal(t, lua.Refused, lua.Code(call{owner: o, seq: 1, count: 1, waiting: true}.acquire(t, rc, k)[0]), "%s is refused", o)
	}
}

// waitingClients returns the Clients recorded as waiting on k's lock to be
// woken, longest waiting first (not the marks of those woken).
func waitingClients(t *testing.T, rc rueidis.Client, k keys.Keys) []string {
	t.Helper()
	ids, err := rc.Do(t.Context(), rc.B().Zrange().Key(k.Queue).Min("-inf").Max("("+woken).Byscore().Build()).AsStrSlice()
	require.NoError(t, err)
	return ids
}

// woken is what a woken Client's mark adds to its score (lua/waiting.lua):
// 2^52.
const woken = "4503599627370496"

// listen subscribes to channel and to every inbox for it on a client of
// its own and returns the messages that reach it, once the subscription
// is confirmed, failing t for one that arrives where its addressee would
// not hear it: an addressed message ("@<tag> ...") on the inbox of the
// tag's Client (client.lua), any other on channel. It unsubscribes when
// t ends.
func listen(t *testing.T, node *redistest.Node, channel string) <-chan string {
	t.Helper()
	sub := node.Client(t)
	messages := make(chan string, 16)
	subscribed := make(chan struct{})
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(rueidis.WithOnSubscriptionHook(context.Background(), func(s rueidis.PubSubSubscription) {
		if s.Kind == "psubscribe" {
			close(subscribed)
		}
	}))
	go func() {
		done <- sub.Receive(ctx, sub.B().Psubscribe().Pattern(channel+"*").Build(), func(m rueidis.PubSubMessage) {
			assert.Equal(t, channelFor(channel, m.Message), m.Channel, "the channel of %q", m.Message)
			messages <- m.Message
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-subscribed:
	case <-time.After(redistest.Patience):
		t.Fatal("the subscription was not confirmed")
	}
	return messages
}

// channelFor is where message belongs: an addressed one on the inbox for
// channel of the Client its tag names, any other on channel.
func channelFor(channel, message string) string {
	tag, addressed := strings.CutPrefix(message, pubsub.Addressed)
	if !addressed {
		return channel
	}
	tag, _, _ = strings.Cut(tag, " ")
	client, _, _ := strings.Cut(tag, ":")
	return pubsub.Inbox(channel, client)
}

// next returns the next message, failing t when none comes.
func next(t *testing.T, messages <-chan string) string {
	t.Helper()
	select {
	case m := <-messages:
		return m
	case <-time.After(redistest.Patience):
		t.Fatal("no message")
		return ""
	}
}

// assertNoMessage checks that nothing was published on k's channel since
// the last message read: a marker published now is the next to arrive, as
// one subscription receives in the order Redis published.
func assertNoMessage(t *testing.T, rc rueidis.Client, k keys.Keys, messages <-chan string) {
	t.Helper()
	require.NoError(t, rc.Do(t.Context(), rc.B().Publish().Channel(k.Channel).Message("marker").Build()).Error())
	assert.Equal(t, "marker", next(t, messages), "no other message")
}
