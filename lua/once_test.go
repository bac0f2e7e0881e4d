package lua_test

import (
	"fmt"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// onceKey is the answer key of a new call, on k, of a script that runs
// once per call (once.lua), named as a Client names it.
func onceKey(k keys.Keys) string {
	return fmt.Sprintf("%s:client!%d", k.Fence, runs.Add(1))
}

// TestOnceRunsAtMostOnceAndNeverAfterVoid: a call of a once.lua script
// keeps its answer under its key, which a second copy of it (a resend of
// the same call) does not change; void tells that answer for a call that
// ran, and for one that had not, voids it: the call, reaching Redis
// after, does nothing. Both keys expire. ForceRelease stands for the four
// such scripts.
func TestOnceRunsAtMostOnceAndNeverAfterVoid(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	force := func(answer string) rueidis.RedisResult {
		return lua.ForceRelease.Exec(t.Context(), rc, []string{k.Hash, k.Channel, answer}, []string{"publish", fenceLife})
	}
	void := func(answer string) string {
		s, err := lua.Void.Exec(t.Context(), rc, []string{answer}, []string{fenceLife}).ToString()
		require.NoError(t, err)
		return s
	}

	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)
	ran := onceKey(k)
	n, err := force(ran).AsInt64()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the lock was deleted")
	call{owner: "b", seq: 1, count: 1}.acquire(t, rc, k)
	assert.True(t, rueidis.IsRedisNil(force(ran).Error()), "a copy of a call that ran does nothing")
	assert.Equal(t, "1", void(ran), "void tells the answer of a call that ran")
	assert.Equal(t, "1", void(ran), "again")

	late := onceKey(k)
	assert.Equal(t, "void", void(late), "a call that had not run is voided")
	assert.Equal(t, "void", void(late), "and stays so")
	assert.True(t, rueidis.IsRedisNil(force(late).Error()), "a voided call that comes late does nothing")
	held, err := rc.Do(t.Context(), rc.B().Hget().Key(k.Hash).Field("b").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", held, "b still holds the lock")
	for _, key := range []string{ran, late} {
		assert.Greater(t, pttl(t, rc, key), int64(0), "%s expires with the fence life", key)
	}
	assert.Equal(t, int64(-2), pttl(t, rc, k.Fence), "the fences are left alone")
}
