package lua_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// script runs one of the scripts and returns its integer reply.
func script(t *testing.T, rc rueidis.Client, s *rueidis.Lua, keys, args []string) []int64 {
	t.Helper()
	reply, err := s.Exec(t.Context(), rc, keys, args).AsIntSlice()
	require.NoError(t, err)
	return reply
}

// lockKeys names a lock for t alone, also when tests run again in one
// process (-count) against the same Redis.
func lockKeys(t *testing.T) keys.Keys {
	return keys.New("test:", uniqueName(t))
}

var runs atomic.Int64

func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), runs.Add(1))
}

func acquire(t *testing.T, rc rueidis.Client, k keys.Keys, field, request string) []int64 {
	return script(t, rc, lua.Acquire, []string{k.Hash, k.Token, k.Latch(request)}, []string{field, "30000", "10000"})
}

func release(t *testing.T, rc rueidis.Client, k keys.Keys, field, request string) []int64 {
	return script(t, rc, lua.Release, []string{k.Hash, k.Channel, k.Latch(request)}, []string{field, "30000", "10000", "publish"})
}

func TestAcquireReentersAndFences(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)

	first := acquire(t, rc, k, "a", "r1")
	assert.Equal(t, []int64{1, 1, first[2]}, first, "first acquire: count 1 and a token")
	assert.Equal(t, []int64{1, 2, first[2]}, acquire(t, rc, k, "a", "r2"), "re-entry: count 2, same token")

	busy := acquire(t, rc, k, "b", "r3")
	require.Len(t, busy, 2)
	assert.Equal(t, int64(0), busy[0], "another owner is refused")
	assert.InDelta(t, 30000, busy[1], 1000, "and told the holder's PTTL")

	assert.Equal(t, []int64{1, 1}, release(t, rc, k, "a", "r4"))
	assert.Equal(t, []int64{2, 0}, release(t, rc, k, "a", "r5"))
	next := acquire(t, rc, k, "b", "r6")
	assert.Equal(t, first[2]+1, next[2], "the next holder's token is higher")
}

func TestResentRequestsApplyOnce(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)

	once := acquire(t, rc, k, "a", "acq")
	assert.Equal(t, once, acquire(t, rc, k, "a", "acq"), "a resent acquire gets the first reply")
	count, err := rc.Do(t.Context(), rc.B().Hget().Key(k.Hash).Field("a").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), count, "a resent acquire does not count twice")

	acquire(t, rc, k, "a", "acq2")
	assert.Equal(t, []int64{1, 1}, release(t, rc, k, "a", "rel"))
	assert.Equal(t, []int64{1, 1}, release(t, rc, k, "a", "rel"), "a resent release gets the first reply")
	count, err = rc.Do(t.Context(), rc.B().Hget().Key(k.Hash).Field("a").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), count, "a resent release does not count down twice")
}

func TestReleaseByNonOwnerKeepsLock(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	acquire(t, rc, k, "a", "r1")

	assert.Equal(t, []int64{0, 0}, release(t, rc, k, "b", "r2"), "not held by b")
	count, err := rc.Do(t.Context(), rc.B().Hget().Key(k.Hash).Field("a").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), count, "a's hold is intact")
}

func TestReleasePublishesOnFree(t *testing.T) {
	node := redistest.Shared(t)
	rc, sub := node.Client(t), node.Client(t)
	k := lockKeys(t)
	acquire(t, rc, k, "a", "r1")

	subscribed := make(chan struct{})
	messages := make(chan string, 1)
	done := make(chan error)
	ctx := rueidis.WithOnSubscriptionHook(t.Context(), func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" {
			close(subscribed)
		}
	})
	go func() {
		done <- sub.Receive(ctx, sub.B().Subscribe().Channel(k.Channel).Build(), func(m rueidis.PubSubMessage) {
			messages <- m.Message
		})
	}()
	select {
	case <-subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription was not confirmed")
	}
	assert.Equal(t, []int64{2, 0}, release(t, rc, k, "a", "r2"))
	select {
	case m := <-messages:
		assert.Equal(t, "unlocked", m, "the final release publishes")
	case <-time.After(5 * time.Second):
		t.Error("the final release published nothing")
	}
	require.NoError(t, sub.Do(t.Context(), sub.B().Unsubscribe().Channel(k.Channel).Build()).Error())
	require.NoError(t, <-done)
}

func TestForceRelease(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	k := lockKeys(t)
	acquire(t, rc, k, "a", "r1")
	args := []string{"publish"}
	keys := []string{k.Hash, k.Channel}
	n, err := lua.ForceRelease.Exec(t.Context(), rc, keys, args).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	n, err = lua.ForceRelease.Exec(t.Context(), rc, keys, args).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "nothing left to delete")
}

func TestRenewChecksOwner(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	// One call renews keys of one slot: two locks of one group.
	group := uniqueName(t)
	tagged := []keys.Keys{keys.NewGrouped("test:", group, "1"), keys.NewGrouped("test:", group, "2")}
	acquire(t, rc, tagged[0], "a", "r3")
	acquire(t, rc, tagged[1], "b", "r4")
	reply := script(t, rc, lua.Renew, []string{tagged[0].Hash, tagged[1].Hash}, []string{"60000", "a", "a"})
	assert.Equal(t, []int64{1, 0}, reply, "only the owner's hold is renewed")
	ttl, err := rc.Do(t.Context(), rc.B().Pttl().Key(tagged[0].Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Greater(t, ttl, int64(30000), "the renewed lease is the new one")
}
