package lua_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// TestRWReleaseFencesNotAHash: a fences key that something other
// than rlock overwrote "stops nothing" and is "left alone" (fence.lua), as
// release.lua treats it: a waiter that gives up still takes its waiting
// mark back (so the readers it held back may read), and a release of an
// owner that holds nothing answers NOT_HELD, not a Redis error.
func TestRWReleaseFencesNotAHash(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	require.Equal(t, lua.Granted, lua.Code(reader("a", 1, 1).acquire(t, rc, k)[0]))
	w := writer("w", 1, 1)
	w.waiting = true
	require.Equal(t, lua.Refused, lua.Code(w.acquire(t, rc, k)[0]))
	require.True(t, hexists(t, rc, k.Hash, "w:w#wait"), "the waiting writer's mark")
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Fence).Value("x").Build()).Error())

	script := lua.RWWriteRelease
	got, err := script.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence}, []string{
		"w:w", "2", "0", "publish", "0", fenceLife,
	}).AsIntSlice()
	assert.NoError(t, err, "the writer gives up: its release")
	assert.Equal(t, reply(lua.NotHeld, 0), got)
	assert.False(t, hexists(t, rc, k.Hash, "w:w#wait"), "its mark is gone")

	got, err = lua.RWReadRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, k.Fence}, []string{
		"nobody:r", "3", "0", "publish", "0", fenceLife,
	}).AsIntSlice()
	assert.NoError(t, err, "a release of an owner that holds nothing")
	assert.Equal(t, reply(lua.NotHeld, 0), got)
}
