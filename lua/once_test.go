package lua_test

import (
	"fmt"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// onceName names one call of a script that runs once per call (once.lua),
// as a Client does.
func onceName() string {
	return fmt.Sprintf("client!%d", runs.Add(1))
}

// TestOnceRunsAtMostOnceAndNeverAfterVoid: a call of a once.lua script
// keeps its answer under its name, which a second copy of it (a resend of
// the same name) does not change; void tells that answer for a call that
// ran, and for one that had not, voids it: the call, reaching Redis
// after, does nothing. ForceRelease stands for the four such scripts.
func TestOnceRunsAtMostOnceAndNeverAfterVoid(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	keys := []string{k.Hash, k.Channel, k.Fence}
	force := func(name string) rueidis.RedisResult {
		return lua.ForceRelease.Exec(t.Context(), rc, keys, []string{"publish", name, fenceLife})
	}
	void := func(name string) string {
		s, err := lua.Void.Exec(t.Context(), rc, []string{k.Fence}, []string{name, fenceLife}).ToString()
		require.NoError(t, err)
		return s
	}

	call{owner: "a", seq: 1, count: 1}.acquire(t, rc, k)
	ran := onceName()
	n, err := force(ran).AsInt64()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the lock was deleted")
	call{owner: "b", seq: 1, count: 1}.acquire(t, rc, k)
	assert.True(t, rueidis.IsRedisNil(force(ran).Error()), "a copy of a call that ran does nothing")
	assert.Equal(t, "1", void(ran), "void tells the answer of a call that ran")
	assert.Equal(t, "1", void(ran), "again")

	late := onceName()
	assert.Equal(t, "void", void(late), "a call that had not run is voided")
	assert.Equal(t, "void", void(late), "and stays so")
	assert.True(t, rueidis.IsRedisNil(force(late).Error()), "a voided call that comes late does nothing")
	held, err := rc.Do(t.Context(), rc.B().Hget().Key(k.Hash).Field("b").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", held, "b still holds the lock")
	assert.Greater(t, pttl(t, rc, k.Fence), int64(0), "the names expire with the fences")
}
