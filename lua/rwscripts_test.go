package lua_test

import (
	"strconv"
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

// rwCall is one call of a read-write lock script: owner is the owner's
// base, kind "r" or "w" picks the scripts and the field.
type rwCall struct {
	call
	kind    string
	waiting bool
}

func (c rwCall) field() string { return c.owner + ":" + c.kind }

func (c rwCall) acquire(t testing.TB, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	script, waiting := lua.RWReadAcquire, "0"
	if c.kind == "w" {
		script = lua.RWWriteAcquire
	}
	if c.waiting {
		waiting = "1"
	}
	lease := c.lease
	if lease == 0 {
		lease = 30000
	}
	reply, err := script.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence}, []string{
		c.field(), strconv.Itoa(c.seq), strconv.Itoa(c.count), strconv.Itoa(lease),
		strconv.Itoa(c.superseded), fenceLife, waiting, "publish", "30000", flag(c.lease == 0),
	}).AsIntSlice()
	require.NoError(t, err)
	return reply
}

func (c rwCall) release(t testing.TB, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	script := lua.RWReadRelease
	if c.kind == "w" {
		script = lua.RWWriteRelease
	}
	reply, err := script.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence}, []string{
		c.field(), strconv.Itoa(c.seq), strconv.Itoa(c.count), "publish", strconv.Itoa(c.superseded), fenceLife,
	}).AsIntSlice()
	require.NoError(t, err)
	return reply
}

func reader(owner string, seq, count int) rwCall {
	return rwCall{call: call{owner: owner, seq: seq, count: count}, kind: "r"}
}

func writer(owner string, seq, count int) rwCall {
	return rwCall{call: call{owner: owner, seq: seq, count: count}, kind: "w"}
}

func hexists(t *testing.T, rc rueidis.Client, key, field string) bool {
	t.Helper()
	ok, err := rc.Do(t.Context(), rc.B().Hexists().Key(key).Field(field).Build()).AsBool()
	require.NoError(t, err)
	return ok
}

// TestRWReadersShareWriterExcludes: readers share, a writer is refused by
// them and refuses them, and tokens are the write's for readers after it.
func TestRWReadersShareWriterExcludes(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	a := reader("a", 1, 1).acquire(t, rc, k)
	assert.Equal(t, lua.Granted, lua.Code(a[0]), "the first reader")
	assert.Equal(t, reply(lua.Granted, 1, a[2]), reader("b", 1, 1).acquire(t, rc, k), "a second reader, the same token")
	refused := writer("w", 1, 1).acquire(t, rc, k)
	require.Len(t, refused, 2)
	assert.Equal(t, lua.Refused, lua.Code(refused[0]), "the writer is refused")
	assert.InDelta(t, 30000, refused[1], 1000, "until the readers' leases end")
	assert.False(t, hexists(t, rc, k.Hash, "w:w#wait"), "a single attempt leaves no mark")

	assert.Equal(t, reply(lua.Freed, 0), reader("a", 2, 0).release(t, rc, k))
	assert.Equal(t, reply(lua.Freed, 0), reader("b", 2, 0).release(t, rc, k))
	assertGone(t, rc, k.Hash)
	w := writer("w", 2, 1).acquire(t, rc, k)
	assert.Equal(t, lua.Granted, lua.Code(w[0]), "the writer takes the free lock")
	assert.Greater(t, w[2], a[2], "with a new token")
	assert.Equal(t, lua.Refused, lua.Code(reader("c", 1, 1).acquire(t, rc, k)[0]), "a reader is refused while the writer holds")
	d := reader("w", 3, 1).acquire(t, rc, k)
	assert.Equal(t, reply(lua.Granted, 1, w[2]), d, "the writer reads beside (downgrade), with its token")
	assert.Equal(t, reply(lua.Freed, 0), writer("w", 4, 0).release(t, rc, k))
	assert.True(t, hexists(t, rc, k.Hash, "w:r"), "the downgraded read hold stays")
	assert.Equal(t, lua.Granted, lua.Code(reader("c", 2, 1).acquire(t, rc, k)[0]), "readers join it")
}

// TestRWWaitingMark: a waiting writer's mark holds new readers back, not
// readers re-entering; the writer that gives up takes it back; a mark
// that nobody refreshes ends on its own.
func TestRWWaitingMark(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	require.Equal(t, lua.Granted, lua.Code(reader("a", 1, 1).acquire(t, rc, k)[0]))
	w := writer("w", 1, 1)
	w.waiting, w.lease = true, 400
	refused := w.acquire(t, rc, k)
	require.Equal(t, lua.Refused, lua.Code(refused[0]))
	assert.LessOrEqual(t, refused[1], int64(200), "a waiting writer sleeps half its lease at most")
	assert.True(t, hexists(t, rc, k.Hash, "w:w#wait"), "the waiting writer's mark")

	assert.Equal(t, lua.Refused, lua.Code(reader("b", 1, 1).acquire(t, rc, k)[0]), "a new reader waits behind the writer")
	assert.Equal(t, lua.Granted, lua.Code(reader("a", 2, 2).acquire(t, rc, k)[0]), "a reader holding re-enters")
	assert.Equal(t, reply(lua.NotHeld, 0), writer("w", 2, 0).release(t, rc, k), "the writer gives up")
	assert.False(t, hexists(t, rc, k.Hash, "w:w#wait"), "its mark is gone")
	assert.Equal(t, lua.Granted, lua.Code(reader("b", 2, 1).acquire(t, rc, k)[0]), "new readers read again")

	w.seq = 3
	require.Equal(t, lua.Refused, lua.Code(w.acquire(t, rc, k)[0]))
	assert.Equal(t, lua.Refused, lua.Code(reader("c", 1, 1).acquire(t, rc, k)[0]), "held back by the new mark")
	time.Sleep(500 * time.Millisecond) // the thing under test: the mark's time (pttl + half the lease) passes
	assert.Equal(t, lua.Granted, lua.Code(reader("c", 2, 1).acquire(t, rc, k)[0]), "a mark nobody refreshes ends")
}

// TestRWDeadHoldsPruned: a reader whose own lease passed stops holding
// while another renews the key: the writer's acquire drops it, and takes
// the lock once the live reader leaves.
func TestRWDeadHoldsPruned(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	dead := reader("dead", 1, 1)
	dead.lease = 50
	require.Equal(t, lua.Granted, lua.Code(dead.acquire(t, rc, k)[0]))
	require.Equal(t, lua.Granted, lua.Code(reader("live", 1, 1).acquire(t, rc, k)[0]))
	time.Sleep(100 * time.Millisecond) // the thing under test: the dead reader's 50 ms lease passes
	assert.Equal(t, lua.Refused, lua.Code(writer("w", 1, 1).acquire(t, rc, k)[0]), "the live reader holds")
	assert.False(t, hexists(t, rc, k.Hash, "dead:r"), "the dead reader was dropped")
	assert.Equal(t, reply(lua.NotHeld, 0), reader("dead", 2, 0).release(t, rc, k), "the dead reader holds nothing")
	assert.Equal(t, reply(lua.Freed, 0), reader("live", 2, 0).release(t, rc, k))
	assertGone(t, rc, k.Hash)
}

// TestRWLateCopies: copies of lost calls that arrive late are refused,
// before and after the lock was freed, and a withdrawn mark is not put
// back by a late copy of the refused acquire.
func TestRWLateCopies(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	lost := reader("a", 10, 1)
	issued := lost.acquire(t, rc, k)
	resent := reader("a", 11, 1)
	resent.superseded = 10
	assert.Equal(t, issued, resent.acquire(t, rc, k), "the resend reports the grant")
	assert.Equal(t, reply(lua.Stale, 0), lost.acquire(t, rc, k), "the late copy is stale while held")

	w := writer("w", 5, 1)
	w.waiting = true
	require.Equal(t, lua.Refused, lua.Code(w.acquire(t, rc, k)[0])) // ran; its reply is lost
	giveUp := writer("w", 6, 0)
	giveUp.superseded = 5
	assert.Equal(t, reply(lua.NotHeld, 0), giveUp.release(t, rc, k), "the settling release takes the mark back")
	assert.Equal(t, reply(lua.Stale, 0), w.acquire(t, rc, k), "the late copy is stale")
	assert.False(t, hexists(t, rc, k.Hash, "w:w#wait"), "and leaves no mark")

	assert.Equal(t, reply(lua.Freed, 0), reader("a", 12, 0).release(t, rc, k))
	assert.Equal(t, reply(lua.Stale, 0), lost.acquire(t, rc, k), "the late copy is stale once released too")
	assertGone(t, rc, k.Hash)
}

// TestRWForeignHash: a hash that is not a read-write lock (a Mutex of the
// same name) refuses both kinds, with its PTTL.
func TestRWForeignHash(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	require.Equal(t, lua.Granted, lua.Code(call{owner: "m", seq: 1, count: 1}.acquire(t, rc, k)[0]))
	for _, c := range []rwCall{reader("a", 1, 1), writer("b", 1, 1)} {
		got := c.acquire(t, rc, k)
		require.Len(t, got, 2)
		assert.Equal(t, lua.Refused, lua.Code(got[0]), "kind %s is refused", c.kind)
		assert.InDelta(t, 30000, got[1], 1000)
	}
}

// TestRWWriteReleaseAdmitsWaitingReaders: a write release lets in the
// readers that were waiting for it ahead of a writer waiting then, so a
// stream of writers cannot starve readers; a reader admitted who gives
// up lets the writer go.
func TestRWWriteReleaseAdmitsWaitingReaders(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	require.Equal(t, lua.Granted, lua.Code(writer("w1", 1, 1).acquire(t, rc, k)[0]))
	r, w2 := reader("r", 1, 1), writer("w2", 1, 1)
	r.waiting, w2.waiting = true, true
	require.Equal(t, lua.Refused, lua.Code(r.acquire(t, rc, k)[0]), "the reader waits for the writer")
	require.Equal(t, lua.Refused, lua.Code(w2.acquire(t, rc, k)[0]), "so does a second writer")
	assert.Equal(t, reply(lua.Freed, 0), writer("w1", 2, 0).release(t, rc, k))
	assert.True(t, hexists(t, rc, k.Hash, "r:r#admit"), "the waiting reader is admitted")

	w2.seq = 2
	assert.Equal(t, lua.Refused, lua.Code(w2.acquire(t, rc, k)[0]), "the writer waits for the admitted reader")
	assert.Equal(t, lua.Refused, lua.Code(reader("late", 1, 1).acquire(t, rc, k)[0]), "a new reader waits behind the writer")
	r.seq = 2
	assert.Equal(t, lua.Granted, lua.Code(r.acquire(t, rc, k)[0]), "the admitted reader reads, though a writer waits")
	assert.False(t, hexists(t, rc, k.Hash, "r:r#admit"), "its admission is used")
	w2.seq = 3
	assert.Equal(t, lua.Refused, lua.Code(w2.acquire(t, rc, k)[0]), "the writer waits for the reader")
	assert.Equal(t, reply(lua.Freed, 0), reader("r", 3, 0).release(t, rc, k))
	w2.seq = 4
	assert.Equal(t, lua.Granted, lua.Code(w2.acquire(t, rc, k)[0]), "then writes")

	// An admitted reader who gives up lets the writer go.
	q := reader("q", 1, 1)
	q.waiting = true
	require.Equal(t, lua.Refused, lua.Code(q.acquire(t, rc, k)[0]))
	w3 := writer("w3", 1, 1)
	w3.waiting = true
	require.Equal(t, lua.Refused, lua.Code(w3.acquire(t, rc, k)[0]))
	assert.Equal(t, reply(lua.Freed, 0), writer("w2", 5, 0).release(t, rc, k))
	w3.seq = 2
	require.Equal(t, lua.Refused, lua.Code(w3.acquire(t, rc, k)[0]), "held back by q's admission")
	assert.Equal(t, reply(lua.NotHeld, 0), reader("q", 2, 0).release(t, rc, k), "q gives up")
	w3.seq = 3
	assert.Equal(t, lua.Granted, lua.Code(w3.acquire(t, rc, k)[0]), "the writer goes")
}

// TestRWReleasePublishesWakeAll: a write release that someone waits for
// tells the channel pubsub.WakeAll, the message that wakes every waiter.
func TestRWReleasePublishesWakeAll(t *testing.T) {
	node := redistest.Shared(t)
	rc := node.Client(t)
	k := lockKeys(t)
	require.Equal(t, lua.Granted, lua.Code(writer("w", 1, 1).acquire(t, rc, k)[0]))
	require.Equal(t, lua.Refused, lua.Code(reader("r", 1, 1).acquire(t, rc, k)[0]), "a reader waits")

	messages := listen(t, node, k.Channel)
	assert.Equal(t, reply(lua.Freed, 0), writer("w", 2, 0).release(t, rc, k))
	assert.Equal(t, pubsub.WakeAll, next(t, messages))
}
