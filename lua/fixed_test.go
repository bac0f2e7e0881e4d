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

// renewOne sends the watchdog's renewal of field's hold on hash, for a
// lease of a minute, and returns its answer: 1 renewed, 0 not.
func renewOne(t *testing.T, rc rueidis.Client, hash, field string) int64 {
	t.Helper()
	reply, err := lua.Renew.Exec(t.Context(), rc, []string{hash}, []string{"60000", field}).AsIntSlice()
	require.NoError(t, err)
	require.Len(t, reply, 1)
	return reply[0]
}

// TestRenewLeavesFixedLease: a renewal that reaches Redis after the hold
// it was sent for ended (a reply lost, Redis paused) must not stretch the
// same owner's next hold when that one has a fixed lease. Every way a
// hold begins marks a fixed lease, every renewed re-entry unmarks it, and
// every way a hold ends takes the mark with it.
func TestRenewLeavesFixedLease(t *testing.T) {
	rc := redistest.Shared(t).Client(t)

	t.Run("Mutex", func(t *testing.T) {
		k := lockKeys(t)
		require.Equal(t, lua.Granted, lua.Code(call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)[0]))
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "a"), "a hold the watchdog renews")
		require.Equal(t, reply(lua.Freed, 0), call{owner: "a", seq: 2}.release(t, rc, k))

		require.Equal(t, lua.Granted, lua.Code(call{owner: "a", seq: 3, count: 1, lease: 2000}.acquire(t, rc, k)[0]))
		assert.Zero(t, renewOne(t, rc, k.Hash, "a"), "the earlier hold's renewal, arriving late")
		assert.LessOrEqual(t, pttl(t, rc, k.Hash), int64(2000), "the fixed lease is not stretched")

		require.Equal(t, lua.Granted, lua.Code(call{owner: "a", seq: 4, count: 2, lease: 1000}.acquire(t, rc, k)[0]))
		assert.Zero(t, renewOne(t, rc, k.Hash, "a"), "a fixed re-entry of a fixed hold")
		require.Equal(t, lua.Granted, lua.Code(call{owner: "a", seq: 5, count: 3}.acquire(t, rc, k)[0]))
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "a"), "a re-entry the watchdog renews")
		require.Equal(t, lua.Granted, lua.Code(call{owner: "a", seq: 6, count: 4, lease: 1000}.acquire(t, rc, k)[0]))
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "a"), "a fixed re-entry of a renewed hold stays renewed")

		// The Client's hold ended while Redis kept it (its renewals lost):
		// a new hold of the owner sends count 1, and re-enters in Redis.
		require.Equal(t, reply(lua.Granted, 1, 0)[:2], call{owner: "a", seq: 7, count: 1, lease: 1000}.acquire(t, rc, k)[:2])
		assert.Zero(t, renewOne(t, rc, k.Hash, "a"), "a new fixed hold over the old one: the old one's renewals are late")
		require.Equal(t, reply(lua.Granted, 1, 0)[:2], call{owner: "a", seq: 8, count: 1}.acquire(t, rc, k)[:2])
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "a"), "a new renewed hold over it")
	})

	t.Run("MutexHandOver", func(t *testing.T) {
		k := lockKeys(t)
		for i, heirLease := range []string{"0", "1"} { // fixed, then renewed
			owner, heir := "A:"+strconv.Itoa(i), "A:h"+strconv.Itoa(i)
			require.Equal(t, lua.Granted, lua.Code(call{owner: owner, seq: 10 * i, count: 1}.acquire(t, rc, k)[0]))
			args := []string{owner, strconv.Itoa(10*i + 1), "0", "publish", "0", fenceLife, "0", heir, strconv.Itoa(10*i + 2), "30000", heirLease}
			handed, err := lua.Release.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence, k.Token, k.Queue}, args).AsIntSlice()
			require.NoError(t, err)
			require.Equal(t, lua.Handed, lua.Code(handed[0]))
			want, _ := strconv.ParseInt(heirLease, 10, 64)
			assert.Equal(t, want, renewOne(t, rc, k.Hash, heir), "heir lease renewed: %s", heirLease)
			require.Equal(t, reply(lua.Freed, 0), call{owner: heir, seq: 10*i + 3}.release(t, rc, k))
		}
	})

	t.Run("FairMutex", func(t *testing.T) {
		k := lockKeys(t)
		acquire := func(c call) lua.Code { return lua.Code(c.acquireBy(t, rc, k, lua.FairAcquire)[0]) }
		require.Equal(t, lua.Granted, acquire(call{owner: "F:1", seq: 1, count: 1, lease: 5000}))
		assert.Zero(t, renewOne(t, rc, k.Hash, "F:1"), "a fixed fair hold")
		require.Equal(t, lua.Refused, acquire(call{owner: "G:1", seq: 1, count: 1, lease: 5000, waiting: true}))
		require.Equal(t, reply(lua.Freed, 0), call{owner: "F:1", seq: 2}.releaseBy(t, rc, k, lua.FairRelease), "handed to G by a message")
		assert.Zero(t, renewOne(t, rc, k.Hash, "G:1"), "G was handed a fixed lease")
		require.Equal(t, lua.Refused, acquire(call{owner: "H:1", seq: 1, count: 1, waiting: true}))
		require.Equal(t, reply(lua.Freed, 0), call{owner: "G:1", seq: 2}.releaseBy(t, rc, k, lua.FairRelease))
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "H:1"), "H was handed a renewed lease")
	})

	t.Run("RWMutex", func(t *testing.T) {
		k := keys.NewRW("test:", uniqueName(t))
		fixed := reader("a", 1, 1)
		fixed.lease = 5000
		require.Equal(t, lua.Granted, lua.Code(fixed.acquire(t, rc, k)[0]))
		require.Equal(t, lua.Granted, lua.Code(reader("b", 1, 1).acquire(t, rc, k)[0]))
		assert.Zero(t, renewOne(t, rc, k.Hash, "a:r"), "a fixed read hold")
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "b:r"), "a renewed read hold")
		require.Equal(t, reply(lua.Granted, 2, 0)[:2], reader("a", 2, 2).acquire(t, rc, k)[:2], "a renewed re-entry")
		assert.Equal(t, int64(1), renewOne(t, rc, k.Hash, "a:r"), "unmarked by it")
		again := reader("b", 2, 0)
		require.Equal(t, reply(lua.Freed, 0), again.release(t, rc, k))
		fixed = reader("b", 3, 1)
		fixed.lease = 5000
		require.Equal(t, lua.Granted, lua.Code(fixed.acquire(t, rc, k)[0]))
		assert.Zero(t, renewOne(t, rc, k.Hash, "b:r"), "b's earlier renewal, arriving late")
		require.Equal(t, reply(lua.Freed, 0), reader("b", 4, 0).release(t, rc, k))
		assert.False(t, hexists(t, rc, k.Hash, "b:r#fix"), "the release took the mark")
	})

	t.Run("Semaphore", func(t *testing.T) {
		k := keys.NewSemaphore("test:", uniqueName(t))
		require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("2").Build()).Error())
		require.Equal(t, lua.Granted, lua.Code(semCall{owner: "a", seq: 1, lease: 5000}.acquire(t, rc, k)[0]))
		assert.Zero(t, renewOne(t, rc, k.Hash, "a"), "a fixed permit")
		assert.Equal(t, int64(1), semAvailable(t, rc, k), "the mark is no holder")
		require.Equal(t, reply(lua.Freed, 0), semCall{owner: "a", seq: 2}.release(t, rc, k))
		assert.False(t, hexists(t, rc, k.Hash, "a#fix"), "the release took the mark")

		require.Equal(t, lua.Granted, lua.Code(semCall{owner: "b", seq: 1, lease: 5000}.acquire(t, rc, k)[0]))
		require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Hash).FieldValue().FieldValue("b#exp", "1").Build()).Error()) // b's lease ended
		require.Equal(t, lua.Granted, lua.Code(semCall{owner: "c", seq: 1, lease: 5000}.acquire(t, rc, k)[0]))
		assert.False(t, hexists(t, rc, k.Hash, "b#fix"), "dropping an expired holder takes its mark")
	})
}

// TestFairHeirMarkFollowsHeir: a FairMutex release that hands the lock to
// its Client's heir G (fair_release.lua's handToHeir) is sent G's lease
// and, in ARGV[11], whether the watchdog renews it (rlock/handoff.go
// releaseTo), as release.lua is. The mark follows that, not G's queue
// entry's #lease: what the last waiting call of G's owner asked for, which
// need not be the heir's call (goroutines of one owner share the entry).
func TestFairHeirMarkFollowsHeir(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	for _, tc := range []struct {
		name       string
		entryLease int    // the lease G's entry was queued with (0: renewed)
		heirLease  string // ARGV[10]
		heirRenew  string // ARGV[11]
		renewed    int64  // what a renewal of G must answer
	}{
		{"heir renewed, entry fixed", 5000, "30000", "1", 1},
		{"heir fixed, entry renewed", 0, "700", "0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := lockKeys(t)
			acquire := func(c call) lua.Code { return lua.Code(c.acquireBy(t, rc, k, lua.FairAcquire)[0]) }
			require.Equal(t, lua.Granted, acquire(call{owner: "C:f", seq: 1, count: 1}))
			require.Equal(t, lua.Refused, acquire(call{owner: "C:g", seq: 2, count: 1, lease: tc.entryLease, waiting: true}))
			args := []string{"C:f", "3", "0", "publish", "0", fenceLife, "0", "C:g", "4", tc.heirLease, tc.heirRenew}
			handed, err := lua.FairRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence, k.Token, k.Queue}, args).AsIntSlice()
			require.NoError(t, err)
			require.Equal(t, lua.Handed, lua.Code(handed[0]))
			t.Logf("C:g#fix set: %v, pttl %d", hexists(t, rc, k.Hash, "C:g#fix"), pttl(t, rc, k.Hash))
			assert.Equal(t, tc.renewed, renewOne(t, rc, k.Hash, "C:g"), "a renewal of the heir's hold")
			if tc.renewed == 0 {
				assert.LessOrEqual(t, pttl(t, rc, k.Hash), int64(700), "the heir's fixed lease is not stretched")
			}
		})
	}
}
