package lua_test

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// lockKeys names a lock for t alone, also when tests run again in one
// process (-count) against the same Redis.
func lockKeys(t *testing.T) keys.Keys {
	return keys.New("test:", uniqueName(t))
}

var runs atomic.Int64

func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), runs.Add(1))
}

// call is one script call of the request protocol, as rlock sends it.
type call struct {
	owner      string
	seq        int
	count      int // acquire: the count after a re-entry; release: the count after
	superseded int
	lease      int    // ms, acquire only; 0 for the watchdog's, which renews it
	waiting    bool   // acquire: the caller waits on the unlock channel
	leaving    bool   // release: the owner's Client stops waiting
	heir       string // release: the waiter to hand the lock to at 0, under seq heirSeq
	heirSeq    int
}

const fenceLife = "60000"

// reply is a script's reply: its code, then the values after it.
func reply(code lua.Code, values ...int64) []int64 {
	return append([]int64{int64(code)}, values...)
}

func (c call) acquire(t testing.TB, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	return c.acquireBy(t, rc, k, lua.Acquire)
}

// acquireBy is acquire with script s, a kind's acquire script.
func (c call) acquireBy(t testing.TB, rc rueidis.Client, k keys.Keys, s *lua.Script) []int64 {
	t.Helper()
	reply, err := s.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel}, c.acquireArgs()).AsIntSlice()
	require.NoError(t, err)
	return reply
}

// acquireArgs is the ARGV of c as an acquire script of any kind.
func (c call) acquireArgs() []string {
	return []string{
		c.owner, strconv.Itoa(c.seq), strconv.Itoa(c.count), strconv.Itoa(cmp.Or(c.lease, 30000)),
		strconv.Itoa(c.superseded), fenceLife, flag(c.waiting), "publish", "30000", flag(c.lease == 0),
	}
}

func (c call) release(t testing.TB, rc rueidis.Client, k keys.Keys) []int64 {
	t.Helper()
	return c.releaseBy(t, rc, k, lua.Release)
}

// releaseBy is release with script s, a kind's release script.
func (c call) releaseBy(t testing.TB, rc rueidis.Client, k keys.Keys, s *lua.Script) []int64 {
	t.Helper()
	args := []string{
		c.owner, strconv.Itoa(c.seq), strconv.Itoa(c.count), "publish", strconv.Itoa(c.superseded), fenceLife, flag(c.leaving),
	}
	if c.heir != "" {
		args = append(args, c.heir, strconv.Itoa(c.heirSeq), "30000")
	}
	reply, err := s.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence, k.Token, k.Queue}, args).AsIntSlice()
	require.NoError(t, err)
	return reply
}

// flag is a script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func hget(t *testing.T, rc rueidis.Client, key, field string) (int64, bool) {
	t.Helper()
	n, err := rc.Do(t.Context(), rc.B().Hget().Key(key).Field(field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, false
	}
	require.NoError(t, err)
	return n, true
}

func pttl(t *testing.T, rc rueidis.Client, key string) int64 {
	t.Helper()
	ms, err := rc.Do(t.Context(), rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return ms
}

func TestAcquireReentersAndFences(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)

	first := call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)
	assert.Equal(t, reply(lua.Granted, 1, first[2]), first, "first acquire: count 1 and a token")
	assert.Equal(t, reply(lua.Granted, 2, first[2]), call{owner: "a", seq: 2, count: 2}.acquire(t, rc, k), "re-entry: count 2, same token")

	busy := call{owner: "b", seq: 1, count: 1}.acquire(t, rc, k)
	require.Len(t, busy, 2)
	assert.Equal(t, lua.Refused, lua.Code(busy[0]), "another owner is refused")
	assert.InDelta(t, 30000, busy[1], 1000, "and told the holder's PTTL")

	assert.Equal(t, reply(lua.StillHeld, 1), call{owner: "a", seq: 3, count: 1}.release(t, rc, k))
	assert.Equal(t, reply(lua.Freed, 0), call{owner: "a", seq: 4, count: 0}.release(t, rc, k))
	next := call{owner: "b", seq: 2, count: 1}.acquire(t, rc, k)
	assert.Equal(t, first[2]+1, next[2], "the next holder's token is higher")
}

// TestReentryOfAGoneHoldTakesNothing: every lock kind's acquire answers
// a re-entry (count above 1) of an owner whose hold Redis no longer has
// (it expired; here its keys are deleted) with {NotHeld, 0} and takes
// nothing, with fences kept or not; the owner's next call, at one level,
// takes the free lock (hold.lua's gone).
func TestReentryOfAGoneHoldTakesNothing(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	kinds := map[string]func(c call, k keys.Keys) []int64{
		"mutex": func(c call, k keys.Keys) []int64 { return c.acquire(t, rc, k) },
		"fair":  func(c call, k keys.Keys) []int64 { return c.acquireBy(t, rc, k, lua.FairAcquire) },
		"read":  func(c call, k keys.Keys) []int64 { return rwCall{call: c, kind: "r"}.acquire(t, rc, k) },
		"write": func(c call, k keys.Keys) []int64 { return rwCall{call: c, kind: "w"}.acquire(t, rc, k) },
	}
	for name, acquire := range kinds {
		for _, fenced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fenced=%v", name, fenced), func(t *testing.T) {
				k := lockKeys(t)
				require.Equal(t, lua.Granted, lua.Code(acquire(call{owner: "a", seq: 1, count: 1}, k)[0]))
				superseded := 0
				if fenced {
					superseded = 2 // a call of a whose reply was lost
				}
				require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error())
				assert.Equal(t, reply(lua.NotHeld, 0), acquire(call{owner: "a", seq: 3, count: 2, superseded: superseded}, k))
				assertGone(t, rc, k.Hash) // nothing taken
				if fenced {
					assert.Equal(t, reply(lua.Stale, 0), acquire(call{owner: "a", seq: 2, count: 2}, k), "the superseded call is fenced")
				}
				assert.Equal(t, lua.Granted, lua.Code(acquire(call{owner: "a", seq: 4, count: 1}, k)[0]), "a first level takes it")
			})
		}
	}
}

// TestResendAndLateCopy plays a first acquire whose reply was lost, its
// resend, and the lost call's copy arriving late, before and after the
// release: the copy is refused both times and nothing counts twice.
func TestResendAndLateCopy(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)

	lost := call{owner: "a", seq: 10, count: 1}
	issued := lost.acquire(t, rc, k) // ran; its reply is lost
	resent := call{owner: "a", seq: 11, count: 1, superseded: 10}.acquire(t, rc, k)
	assert.Equal(t, issued, resent, "the resend reports the grant, with its token")
	n, _ := hget(t, rc, k.Hash, "a")
	assert.Equal(t, int64(1), n, "the resend does not count twice")

	assert.Equal(t, reply(lua.Stale, 0), lost.acquire(t, rc, k), "the late copy is stale while held")
	assert.Equal(t, reply(lua.Freed, 0), call{owner: "a", seq: 12, count: 0}.release(t, rc, k), "released")
	assert.Equal(t, reply(lua.Stale, 0), lost.acquire(t, rc, k), "the late copy is stale once released too")
	assertGone(t, rc, k.Hash)
}

// TestGiveUpSettles plays an acquire given up with its reply missing, once
// after it ran and once before: the settling release takes back what it
// did, and the copy arriving later is refused.
func TestGiveUpSettles(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)

	ran := call{owner: "a", seq: 20, count: 1}
	ran.acquire(t, rc, k)
	assert.Equal(t, reply(lua.Freed, 0), call{owner: "a", seq: 21, count: 0, superseded: 20}.release(t, rc, k), "settling frees what the lost call took")
	assert.Equal(t, reply(lua.Stale, 0), ran.acquire(t, rc, k), "a second copy is stale")
	assertGone(t, rc, k.Hash)

	pending := call{owner: "a", seq: 22, count: 1}
	assert.Equal(t, reply(lua.NotHeld, 0), call{owner: "a", seq: 23, count: 0, superseded: 22}.release(t, rc, k), "nothing to take back")
	assert.Equal(t, reply(lua.Stale, 0), pending.acquire(t, rc, k), "the copy arriving after the give-up is stale")
	assertGone(t, rc, k.Hash)
	assert.Positive(t, pttl(t, rc, k.Fence), "the fence expires")

	got := call{owner: "a", seq: 24, count: 1}.acquire(t, rc, k)
	assert.Equal(t, lua.Granted, lua.Code(got[0]), "a later call of the owner passes the fence")
}

// TestReentryOnlyLengthens checks that no call shortens a live lease: a
// re-entry with a shorter lease, a release with levels left, a renewal.
func TestReentryOnlyLengthens(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k) // the watchdog's 30 s
	call{owner: "a", seq: 2, count: 2, lease: 100}.acquire(t, rc, k)
	assert.Greater(t, pttl(t, rc, k.Hash), int64(25000), "a shorter re-entry keeps the longer lease")
	call{owner: "a", seq: 3, count: 1}.release(t, rc, k)
	assert.Greater(t, pttl(t, rc, k.Hash), int64(25000), "a release keeps the lease")
	reply, err := lua.Renew.Exec(t.Context(), rc, []string{k.Hash}, []string{"1000", "a"}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, reply, "still held")
	assert.Greater(t, pttl(t, rc, k.Hash), int64(25000), "a renewal keeps the longer lease")
	call{owner: "a", seq: 4, count: 3, lease: 90000}.acquire(t, rc, k)
	assert.Greater(t, pttl(t, rc, k.Hash), int64(85000), "a longer re-entry lengthens it")
}

func TestReleaseByNonOwnerKeepsLock(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)

	assert.Equal(t, reply(lua.NotHeld, 0), call{owner: "b", seq: 1, count: 0}.release(t, rc, k), "not held by b")
	n, _ := hget(t, rc, k.Hash, "a")
	assert.Equal(t, int64(1), n, "a's hold is intact")
}

// TestWrongTypeWritesNothing overwrites a lock's key with a string: acquire
// fails before writing anything, and release answers "not held". A
// fencing counter that is not one fails an acquire before it writes too:
// a waiter's Client stays among the waiting Clients.
func TestWrongTypeWritesNothing(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Hash).Value("x").Build()).Error())
	_, err := lua.Acquire.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel},
		[]string{"a", "1", "1", "30000", "0", fenceLife, "0", "publish", "30000", "0"}).AsIntSlice()
	assert.ErrorContains(t, err, "WRONGTYPE")
	for _, key := range []string{k.Token, k.Fence, k.Queue} {
		assertGone(t, rc, key)
	}
	assert.Equal(t, reply(lua.NotHeld, 0), call{owner: "a", seq: 2, count: 0, superseded: 1}.release(t, rc, k))

	k = lockKeys(t)
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("not a number").Build()).Error())
	_, err = lua.Acquire.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel},
		[]string{"a", "1", "1", "30000", "0", fenceLife, "0", "publish", "30000", "0"}).AsIntSlice()
	assert.Error(t, err, "a fencing counter that is not a number")
	assertGone(t, rc, k.Hash)

	k = lockKeys(t)
	require.Equal(t, lua.Granted, lua.Code(call{owner: "H:1", seq: 1, count: 1}.acquire(t, rc, k)[0]))
	require.Equal(t, lua.Refused, lua.Code(call{owner: "A:1", seq: 1, count: 1, waiting: true}.acquire(t, rc, k)[0]))
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error()) // H's lease ran out
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("not a number").Build()).Error())
	_, err = lua.Acquire.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel},
		[]string{"A:1", "2", "1", "30000", "0", fenceLife, "1", "publish", "30000", "0"}).AsIntSlice()
	assert.Error(t, err, "a fencing counter that is not a number")
	assertGone(t, rc, k.Hash)
	assert.Equal(t, []string{"A"}, waitingClients(t, rc, k), "A still waits")
}

// TestReleasePublishesOnlyToWaiters: the final release publishes when an
// acquire was refused meanwhile, and not otherwise.
func TestReleasePublishesOnlyToWaiters(t *testing.T) {
	node := redistest.Shared(t)
	rc := node.Client(t)
	k := lockKeys(t)
	messages := listen(t, node, k.Channel)

	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)
	assert.Equal(t, reply(lua.Freed, 0), call{owner: "a", seq: 2, count: 0}.release(t, rc, k))
	call{owner: "a", seq: 3, count: 1}.acquire(t, rc, k)
	assert.Equal(t, lua.Refused, lua.Code(call{owner: "b", seq: 1, count: 1}.acquire(t, rc, k)[0]), "b waits")
	assert.Equal(t, reply(lua.Freed, 0), call{owner: "a", seq: 4, count: 0}.release(t, rc, k))
	assert.Equal(t, "unlocked", next(t, messages), "the release with a waiter publishes")
	assert.Empty(t, messages, "the release without waiters published nothing")
}

func TestForceRelease(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)
	args := []string{"publish", fenceLife}
	n, err := lua.ForceRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, onceKey(k)}, args).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	n, err = lua.ForceRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, onceKey(k)}, args).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "nothing left to delete")
}

func TestRenewChecksOwner(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	// One call renews keys of one slot: two locks of one group.
	group := uniqueName(t)
	tagged := []keys.Keys{keys.NewGrouped("test:", group, "1"), keys.NewGrouped("test:", group, "2")}
	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, tagged[0])
	call{owner: "b", seq: 1, count: 1}.acquire(t, rc, tagged[1])
	reply, err := lua.Renew.Exec(t.Context(), rc, []string{tagged[0].Hash, tagged[1].Hash}, []string{"60000", "a", "a"}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, reply, "only the owner's hold is renewed")
	assert.Greater(t, pttl(t, rc, tagged[0].Hash), int64(30000), "the renewed lease is the new one")
}

func assertGone(t *testing.T, rc rueidis.Client, key string) {
	t.Helper()
	n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "%s does not exist", key)
}

func TestRenewOwnLease(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	now := redistest.Millis(t, rc)
	// Two holders with leases of their own: a live one and one whose lease
	// passed while the key lives on for the other.
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Hash).FieldValue().
		FieldValue("a", "1").FieldValue("a#exp", strconv.FormatInt(now+500, 10)).
		FieldValue("b", "1").FieldValue("b#exp", strconv.FormatInt(now-1, 10)).Build()).Error())
	require.NoError(t, rc.Do(t.Context(), rc.B().Pexpire().Key(k.Hash).Milliseconds(500).Build()).Error())

	reply, err := lua.Renew.Exec(t.Context(), rc, []string{k.Hash, k.Hash}, []string{"60000", "a", "b"}).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, reply, "a hold whose own lease passed is lost")
	exp, ok := hget(t, rc, k.Hash, "a#exp")
	require.True(t, ok)
	assert.GreaterOrEqual(t, exp, now+60000, "the own lease moved to now + lease")
	assert.Greater(t, pttl(t, rc, k.Hash), int64(30000), "the key outlasts the renewed hold")
	exp, _ = hget(t, rc, k.Hash, "b#exp")
	assert.Equal(t, now-1, exp, "a lost hold's lease is not revived")
}
