package lua_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// semCall is one semaphore script call of the request protocol.
type semCall struct {
	owner      string
	seq, count int
	lease      int // ms, acquire only
	superseded int
}

func (c semCall) acquire(t *testing.T, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	reply, err := lua.SemaphoreAcquire.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel}, []string{
		c.owner, strconv.Itoa(c.seq), strconv.Itoa(c.count), strconv.Itoa(max(c.lease, 1)),
		strconv.Itoa(c.superseded), fenceLife, "1", "publish", "30000", "0",
	}).AsIntSlice()
	require.NoError(t, err)
	return reply
}

func (c semCall) release(t *testing.T, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	reply, err := lua.SemaphoreRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence}, []string{
		c.owner, strconv.Itoa(c.seq), strconv.Itoa(c.count), "publish", strconv.Itoa(c.superseded), fenceLife,
	}).AsIntSlice()
	require.NoError(t, err)
	return reply
}

func semAvailable(t *testing.T, rc rueidis.Client, k keys.Keys) int64 {
	t.Helper()
	n, err := lua.SemaphoreAvailable.Exec(t.Context(), rc, []string{k.Hash, k.Token}, nil).AsIntSlice()
	require.NoError(t, err)
	require.Len(t, n, 2, "permits and held")
	return n[0] - n[1]
}

// TestSemaphoreScripts: permits are counted over holders, a refusal
// answers the time until the earliest holder's lease ends, an expired
// holder is dropped and its permits are free, and resends and late copies
// count once.
func TestSemaphoreScripts(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := keys.NewSemaphore("test:", uniqueName(t))
	assert.Equal(t, reply(lua.Refused, -1), semCall{owner: "a", seq: 1, lease: 30000}.acquire(t, rc, k), "no permits set: refused, nobody to wait for")
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("2").Build()).Error())

	assert.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "a", seq: 2, count: 1, lease: 300}.acquire(t, rc, k))
	assert.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "b", seq: 3, count: 1, lease: 30000}.acquire(t, rc, k))
	assert.Equal(t, int64(0), semAvailable(t, rc, k))
	refused := semCall{owner: "c", seq: 4, count: 1, lease: 30000}.acquire(t, rc, k)
	require.Len(t, refused, 2)
	assert.Equal(t, lua.Refused, lua.Code(refused[0]))
	assert.InDelta(t, 300, refused[1], 100, "the wait is until a's lease ends, the earliest")

	// A re-entry of b needs a free permit too.
	assert.Equal(t, lua.Refused, lua.Code(semCall{owner: "b", seq: 5, count: 2, lease: 30000}.acquire(t, rc, k)[0]))

	// a's own lease passes; the key lives on for b.
	redistest.Eventually(t, "a's permit is free once its lease passed", func(context.Context) error {
		return redistest.Exactly("available", semAvailable(t, rc, k), 1)
	})
	assert.Equal(t, reply(lua.Granted, 2, 0), semCall{owner: "b", seq: 6, count: 2, lease: 30000}.acquire(t, rc, k), "b takes it")
	assert.Equal(t, reply(lua.NotHeld, 0), semCall{owner: "a", seq: 7, count: 0}.release(t, rc, k), "a holds nothing any more")

	// A release whose reply was lost, resent: it counts once.
	lost := semCall{owner: "b", seq: 8, count: 1}
	assert.Equal(t, reply(lua.StillHeld, 1), lost.release(t, rc, k))
	assert.Equal(t, reply(lua.StillHeld, 1), semCall{owner: "b", seq: 9, count: 1, superseded: 8}.release(t, rc, k), "absolute counts")
	assert.Equal(t, reply(lua.Stale, 0), lost.release(t, rc, k), "the late copy is stale")
	assert.Equal(t, int64(1), semAvailable(t, rc, k))
	assert.Equal(t, reply(lua.Freed, 0), semCall{owner: "b", seq: 10, count: 0}.release(t, rc, k))
	assert.Equal(t, int64(2), semAvailable(t, rc, k))
	assertGone(t, rc, k.Hash)
	n, err := rc.Do(t.Context(), rc.B().Get().Key(k.Token).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the permits outlive every holder")
}

// TestSemaphoreGrantPublishesPermitsBack: a grant that gives permits back,
// a new hold of an owner whose ended one left more in Redis, tells the
// waiters as a release would; a grant that takes as many as came back
// tells nobody.
func TestSemaphoreGrantPublishesPermitsBack(t *testing.T) {
	node := redistest.Shared(t)
	rc := node.Client(t)
	k := keys.NewSemaphore("test:", uniqueName(t))
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("3").Build()).Error())
	messages := listen(t, node, k.Channel)
	mark := func(note string) {
		require.NoError(t, rc.Do(t.Context(), rc.B().Publish().Channel(k.Channel).Message(note).Build()).Error())
	}

	for seq := 1; seq <= 3; seq++ {
		require.Equal(t, reply(lua.Granted, int64(seq), 0), semCall{owner: "a", seq: seq, count: seq, lease: 30000}.acquire(t, rc, k))
	}
	require.Equal(t, lua.Refused, lua.Code(semCall{owner: "w", seq: 4, count: 1, lease: 30000}.acquire(t, rc, k)[0]), "w waits")

	// a's hold of three ended in its process; a new one asks for one.
	assert.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "a", seq: 5, count: 1, lease: 30000}.acquire(t, rc, k))
	assert.Equal(t, "all", next(t, messages), "two permits came back: every waiter is told")
	assert.Equal(t, int64(2), semAvailable(t, rc, k))

	// a new hold of one, over an ended hold of two: one comes back.
	require.Equal(t, reply(lua.Granted, 2, 0), semCall{owner: "a", seq: 6, count: 2, lease: 30000}.acquire(t, rc, k))
	mark("after the re-entry")
	assert.Equal(t, "after the re-entry", next(t, messages), "a grant that takes a permit tells nobody")
	assert.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "a", seq: 7, count: 1, lease: 30000}.acquire(t, rc, k))
	assert.Equal(t, "unlocked", next(t, messages), "one permit came back: one waiter is told")
	assert.Equal(t, int64(2), semAvailable(t, rc, k))
}
