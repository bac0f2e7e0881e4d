package lua_test

import (
	"strconv"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// permitRelease is one call of semaphore_permit_release: Client client
// gives back permit id, as call seq of the request reserved at first.
type permitRelease struct {
	client, id        string
	seq, first, super int
}

func (c permitRelease) send(t *testing.T, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	reply, err := lua.SemaphorePermitRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence}, []string{
		c.client, strconv.Itoa(c.seq), strconv.Itoa(c.first), "publish", strconv.Itoa(c.super), fenceLife, "permit:" + c.id,
	}).AsIntSlice()
	require.NoError(t, err)
	return reply
}

func permitExtend(t *testing.T, rc rueidis.Client, k keys.Keys, id string, ms int) int64 {
	t.Helper()
	n, err := lua.SemaphorePermitExtend.Exec(t.Context(), rc, []string{k.Hash, onceKey(k)}, []string{"permit:" + id, strconv.Itoa(ms), fenceLife}).AsInt64()
	require.NoError(t, err)
	return n
}

// TestSemaphorePermitScripts: a travelling permit is taken by
// semaphore_acquire with the permit as owner, lengthened (never
// shortened) by any Client, and given back once by a release request of
// another Client: a resend of the release that applied answers FREED, its
// late copy is stale, another request finds it gone.
func TestSemaphorePermitScripts(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := keys.NewSemaphore("test:", uniqueName(t))
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("2").Build()).Error())
	assert.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "permit:p", seq: 100, count: 1, lease: 30000, superseded: 99}.acquire(t, rc, k), "its call 99 was lost on the way")
	assert.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "permit:q", seq: 101, count: 1, lease: 30000}.acquire(t, rc, k))
	assert.Equal(t, int64(0), semAvailable(t, rc, k), "travelling permits are holders")

	assert.Equal(t, int64(1), permitExtend(t, rc, k, "p", 60000))
	pttl, err := rc.Do(t.Context(), rc.B().Pttl().Key(k.Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Greater(t, pttl, int64(50000), "the hash outlives the lengthened permit")
	assert.Equal(t, int64(1), permitExtend(t, rc, k, "p", 10), "a shorter lease is no error")
	assert.Equal(t, int64(0), permitExtend(t, rc, k, "nobody", 60000), "an unknown permit")

	// Client c's request reserved 5; its first call (6) ran, its reply lost.
	lost := permitRelease{client: "c", id: "p", seq: 6, first: 5}
	assert.Equal(t, reply(lua.Freed, 0), lost.send(t, rc, k))
	assert.Equal(t, reply(lua.Freed, 0), permitRelease{client: "c", id: "p", seq: 7, first: 5, super: 6}.send(t, rc, k), "the resend answers as the first call")
	assert.Equal(t, reply(lua.Stale, 0), lost.send(t, rc, k), "the late copy is stale")
	assert.Equal(t, int64(1), semAvailable(t, rc, k), "one permit came back")
	assert.Equal(t, reply(lua.NotHeld, 0), permitRelease{client: "c", id: "p", seq: 9, first: 8}.send(t, rc, k), "a new request finds it gone")
	assert.Equal(t, reply(lua.NotHeld, 0), permitRelease{client: "d", id: "p", seq: 2, first: 1}.send(t, rc, k), "and so does another Client's")
	assert.Equal(t, int64(0), permitExtend(t, rc, k, "p", 60000), "a released permit is not revived")
	assert.Equal(t, reply(lua.Stale, 0), semCall{owner: "permit:p", seq: 99, count: 1, lease: 30000}.acquire(t, rc, k), "nor re-taken by the lost call of its acquire, arriving late")
	assert.Equal(t, int64(1), semAvailable(t, rc, k))

	assert.Equal(t, reply(lua.Freed, 0), permitRelease{client: "d", id: "q", seq: 4, first: 3}.send(t, rc, k))
	assert.Equal(t, int64(2), semAvailable(t, rc, k))
	assertGone(t, rc, k.Hash)
}

// TestSemaphorePermitWrongType: a holders hash or fences key of another
// type is an error, and nothing is written.
func TestSemaphorePermitWrongType(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := keys.NewSemaphore("test:", uniqueName(t))
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Hash).Value("x").Build()).Error())
	_, err := lua.SemaphorePermitRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence}, []string{
		"c", "2", "1", "publish", "1", fenceLife, "permit:p",
	}).AsIntSlice()
	assert.ErrorContains(t, err, "WRONGTYPE")
	assertGone(t, rc, k.Fence)
	assert.Equal(t, int64(0), permitExtend(t, rc, k, "p", 60000), "not a semaphore: no permit")
	v, err := rc.Do(t.Context(), rc.B().Get().Key(k.Hash).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "x", v, "left as it was")
}
