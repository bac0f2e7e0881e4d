package lua_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// TestSemaphoreReleaseNeverTakesPermits: semaphore_release "sets the
// permits one owner holds lower". rlock's settle sends the turn's confirmed
// count, which after an ended hold (2 levels) is above what a lost
// new-hold acquire (count 1) left in Redis. The release must not raise the
// owner's permits past what it holds: that takes permits without the
// check an acquire makes, beyond the semaphore's permits.
func TestSemaphoreReleaseNeverTakesPermits(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := keys.NewSemaphore("test:", uniqueName(t))
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("2").Build()).Error())

	require.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "g", seq: 1, count: 1, lease: 30000}.acquire(t, rc, k))
	// The owner's new hold asks for 1 (its reply is lost)...
	require.Equal(t, reply(lua.Granted, 1, 0), semCall{owner: "f", seq: 2, count: 1, lease: 30000}.acquire(t, rc, k))
	// ...and the settling release goes back to the turn's confirmed count 2.
	got := semCall{owner: "f", seq: 3, count: 2, superseded: 2}.release(t, rc, k)
	n, _ := hget(t, rc, k.Hash, "f")
	assert.LessOrEqual(t, n, int64(1), "a release never raises an owner's permits (reply %v)", got)
	assert.GreaterOrEqual(t, semAvailable(t, rc, k), int64(0), "no more permits held than exist")
}

// TestSemaphoreBadPermitsWritesNothing: a permits key that is a string but
// not a number (written by something other than rlock) fails the acquire,
// as acquire.lua fails on a fencing counter that is not a number: before
// it writes anything. semaphore_acquire fails only when it compares, after
// it dropped expired holders (without telling the waiters) and recorded
// the fence.
func TestSemaphoreBadPermitsWritesNothing(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := keys.NewSemaphore("test:", uniqueName(t))
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Token).Value("not a number").Build()).Error())
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Hash).FieldValue().
		FieldValue("x", "1").FieldValue("x#seq", "1").FieldValue("x#exp", "1").FieldValue("waiters", "1").Build()).Error())
	require.NoError(t, rc.Do(t.Context(), rc.B().Pexpire().Key(k.Hash).Milliseconds(30000).Build()).Error())

	_, err := lua.SemaphoreAcquire.Exec(t.Context(), rc, []string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel}, []string{
		"a", "5", "1", "30000", "4", fenceLife, "1", "publish", "30000", "0",
	}).AsIntSlice()
	assert.Error(t, err, "permits that are not a number")
	t.Logf("error: %v", err)
	assertGone(t, rc, k.Fence)
	_, held := hget(t, rc, k.Hash, "x")
	assert.True(t, held, "the expired holder is left as it was")
}
