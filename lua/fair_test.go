package lua_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// TestFairLateReleaseIsStale: a fair lock's release that names an heir,
// and whose reply was lost, is sent again and hands the lock over. A copy
// of the first that arrives once the lock is free again, with the heir at
// the head of the queue once more, is stale: it hands the heir nothing,
// which nobody would have told it of.
func TestFairLateReleaseIsStale(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	acquire := func(c call) lua.Code { return lua.Code(c.acquireBy(t, rc, k, lua.FairAcquire)[0]) }
	release := func(c call) []int64 { return c.releaseBy(t, rc, k, lua.FairRelease) }

	require.Equal(t, lua.Granted, acquire(call{owner: "F:1", seq: 1, count: 1}))
	require.Equal(t, lua.Refused, acquire(call{owner: "G:1", seq: 2, count: 1, waiting: true}))
	lost := call{owner: "F:1", seq: 3, heir: "G:1", heirSeq: 4}
	handed := release(call{owner: "F:1", seq: 5, superseded: 3, heir: "G:1", heirSeq: 4})
	require.Equal(t, lua.Handed, lua.Code(handed[0]), "the resend hands the lock to G")
	require.Equal(t, reply(lua.Freed, 0), release(call{owner: "G:1", seq: 6}))

	require.Equal(t, lua.Granted, acquire(call{owner: "X:1", seq: 1, count: 1}))
	require.Equal(t, lua.Refused, acquire(call{owner: "G:1", seq: 7, count: 1, waiting: true}), "G waits again, at the head")
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error()) // X's lease ran out
	assert.Equal(t, reply(lua.Stale, 0), release(lost), "the copy that arrives late")
	assertGone(t, rc, k.Hash)
}

// TestFairWrongCounterWritesNothing: a fair acquire that finds the lock
// free gives it to someone, who needs a token: when the fencing counter is
// not a number (something other than rlock wrote it), the call fails
// before it writes anything, neither dropping the queue's expired head nor
// taking the caller out of the queue, nor fencing.
func TestFairWrongCounterWritesNothing(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	acquire := func(c call) lua.Code { return lua.Code(c.acquireBy(t, rc, k, lua.FairAcquire)[0]) }
	queue := func() map[string]string {
		q, err := rc.Do(t.Context(), rc.B().Hgetall().Key(k.Queue).Build()).AsStrMap()
		require.NoError(t, err)
		return q
	}

	require.Equal(t, lua.Granted, acquire(call{owner: "H:1", seq: 1, count: 1}))
	require.Equal(t, lua.Refused, acquire(call{owner: "E:1", seq: 1, count: 1, waiting: true}))
	require.Equal(t, lua.Refused, acquire(call{owner: "G:1", seq: 1, count: 1, waiting: true}))
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Queue).FieldValue().FieldValue("E:1#exp", "1").Build()).Error()) // E's own lease ended
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error())                                           // H's lease ran out
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("not a number").Build()).Error())
	before := queue()

	for _, c := range []call{
		{owner: "G:1", seq: 3, count: 1, superseded: 2, waiting: true}, // the live head, after E
		{owner: "X:1", seq: 1, count: 1, superseded: 1},                // a newcomer: E and G come first
	} {
		_, err := lua.FairAcquire.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel}, c.acquireArgs()).AsIntSlice()
		assert.ErrorContains(t, err, "not a number", "%s: a fencing counter that is not a number", c.owner)
		assert.Equal(t, before, queue(), "%s: the queue is as it was", c.owner)
		assertGone(t, rc, k.Hash)
		assertGone(t, rc, k.Fence)
	}
}

// TestFairNotHeldReleaseHandsOnByMessage: F's Unlock names heir G (a
// waiter of F's Client, at the queue's head), but F's lease ran out before
// the release arrived, so F holds nothing and the call answers NOT_HELD.
// The free lock still goes to G, and by a message addressed to it (under
// the seq of G's call that queued it), never in the reply: F's Client
// learns nothing of G from a NOT_HELD.
func TestFairNotHeldReleaseHandsOnByMessage(t *testing.T) {
	rc, k, messages := listenedLock(t)
	acquire := func(c call) lua.Code { return lua.Code(c.acquireBy(t, rc, k, lua.FairAcquire)[0]) }

	require.Equal(t, lua.Granted, acquire(call{owner: "C:F", seq: 1, count: 1}))
	require.Equal(t, lua.Refused, acquire(call{owner: "C:G", seq: 2, count: 1, waiting: true}))
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error()) // F's lease ran out

	assert.Equal(t, reply(lua.NotHeld, 0), call{owner: "C:F", seq: 3, heir: "C:G", heirSeq: 4}.releaseBy(t, rc, k, lua.FairRelease))
	seq, held := hget(t, rc, k.Hash, "C:G#seq")
	require.True(t, held, "G holds the lock")
	assert.EqualValues(t, 2, seq, "under the seq of its call that queued it, not the hand-over's")
	note := next(t, messages)
	assert.True(t, strings.HasPrefix(note, "@C:G 2 "), "G is told by a message: %q", note)
	assertGone(t, rc, k.Queue)
}

// TestFairTellsTheNextWaiterOnlyWhenItWouldAskLate: a hand-over tells the
// waiter after the new holder of the lock's lease ('@<w> next <ms>') only
// when that waiter's latest refusal has it ask later than the lease ends
// (W#wake): its expiry tells nobody, and a holder that dies leaves the
// lock to expire. A waiter refused no later than the new holder's own
// lease, which a renewed hold lasts, is told nothing; one behind a fixed
// lease shorter than its sleep is; and one whose refusal gave no time
// (the lock had no expiry, and the head's own lease had passed) is told
// always.
func TestFairTellsTheNextWaiterOnlyWhenItWouldAskLate(t *testing.T) {
	rc, k, messages := listenedLock(t)
	acquire := func(c call) lua.Code { return lua.Code(c.acquireBy(t, rc, k, lua.FairAcquire)[0]) }
	release := func(c call) []int64 { return c.releaseBy(t, rc, k, lua.FairRelease) }
	handedTo := func(w string) {
		t.Helper()
		m := next(t, messages)
		assert.True(t, strings.HasPrefix(m, "@"+w+" "), "the lock is handed to %s by a message: %q", w, m)
		assert.NotContains(t, m, " next ", "%s is handed the lock, not told a lease", w)
	}

	require.Equal(t, lua.Granted, acquire(call{owner: "H:1", seq: 1, count: 1}))
	require.Equal(t, lua.Refused, acquire(call{owner: "A:1", seq: 1, count: 1, waiting: true}))
	require.Equal(t, lua.Refused, acquire(call{owner: "B:1", seq: 1, count: 1, waiting: true}))
	require.Equal(t, lua.Refused, acquire(call{owner: "C:1", seq: 1, count: 1, lease: 10000, waiting: true}))
	require.Equal(t, lua.Refused, acquire(call{owner: "D:1", seq: 1, count: 1, waiting: true}))

	require.Equal(t, reply(lua.Freed, 0), release(call{owner: "H:1", seq: 2}))
	handedTo("A:1")
	assertNoMessage(t, rc, k, messages) // B asks by the end of A's own lease, which A's hold lasts
	require.Equal(t, reply(lua.Freed, 0), release(call{owner: "A:1", seq: 2}))
	handedTo("B:1")
	assertNoMessage(t, rc, k, messages)
	require.Equal(t, reply(lua.Freed, 0), release(call{owner: "B:1", seq: 2}))
	assert.Equal(t, "@D:1 next 10000", next(t, messages), "D would sleep past C's fixed lease")
	handedTo("C:1")

	// F is refused while the lock has no expiry (the head's own lease has
	// passed, so nothing caps it): F's refusal gives no time, and the
	// hand-over to E, ahead of it, tells F.
	require.Equal(t, lua.Refused, acquire(call{owner: "E:1", seq: 1, count: 1, waiting: true}))
	require.NoError(t, rc.Do(t.Context(), rc.B().Persist().Key(k.Hash).Build()).Error())
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Queue).FieldValue().FieldValue("D:1#exp", "1").Build()).Error())
	require.Equal(t, lua.Refused, acquire(call{owner: "F:1", seq: 1, count: 1, waiting: true}))
	wake, queued := hget(t, rc, k.Queue, "F:1#wake")
	require.True(t, queued)
	require.Zero(t, wake, "F's refusal gave no time")
	require.Equal(t, reply(lua.Freed, 0), release(call{owner: "C:1", seq: 2}))
	note := next(t, messages)
	assert.True(t, strings.HasPrefix(note, "@F:1 next "), "F is told E's lease: %q", note)
	handedTo("E:1")
}

// TestFairSharedOwnerKeepsLatestWake: the calls of one owner share its
// queue entry, and one that gives up leaves it to the others; so a
// refusal that would have the owner ask sooner than an earlier one did
// leaves W#wake at the later time, and a hand-over never counts on a call
// that may be gone.
func TestFairSharedOwnerKeepsLatestWake(t *testing.T) {
	rc, k, _ := listenedLock(t)
	acquire := func(c call) []int64 { return c.acquireBy(t, rc, k, lua.FairAcquire) }

	require.Equal(t, int64(lua.Granted), acquire(call{owner: "H:1", seq: 1, count: 1})[0])
	require.Equal(t, int64(lua.Refused), acquire(call{owner: "A:1", seq: 1, count: 1, waiting: true})[0])
	require.Equal(t, int64(lua.Refused), acquire(call{owner: "S:1", seq: 1, count: 1, waiting: true})[0])
	first, queued := hget(t, rc, k.Queue, "S:1#wake")
	require.True(t, queued)
	require.Positive(t, first)

	// A's own lease is cut to some 5 s: S's next call is refused with no
	// more than that.
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Queue).FieldValue().FieldValue("A:1#exp", strconv.FormatInt(first-25000, 10)).Build()).Error())
	refused := acquire(call{owner: "S:1", seq: 2, count: 1, waiting: true})
	require.Equal(t, int64(lua.Refused), refused[0])
	assert.Less(t, refused[1], int64(6000), "capped at A's own lease")
	wake, _ := hget(t, rc, k.Queue, "S:1#wake")
	assert.Equal(t, first, wake, "the entry keeps the later time")
}
