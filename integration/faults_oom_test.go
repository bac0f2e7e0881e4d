package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// oomArgs make a Redis that refuses writes, rather than evicting keys, once
// it uses 2 MB.
var oomArgs = []string{"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}

// fillerKey is the key that fillMemory grows.
const fillerKey = "fault:filler"

// fillMemory grows a filler key until Redis refuses even a one-byte SET with
// OOM: from then on every write that is not allowed at maxmemory fails.
// freeMemory undoes it.
func fillMemory(t *testing.T, rc rueidis.Client) {
	t.Helper()
	chunk := strings.Repeat("x", 16<<10)
	for range 1000 {
		err := rc.Do(t.Context(), rc.B().Set().Key("fault:probe").Value("1").Build()).Error()
		if hasRedisCode(err, "OOM") {
			return
		}
		require.NoError(t, err)
		err = rc.Do(t.Context(), rc.B().Append().Key(fillerKey).Value(chunk).Build()).Error()
		if !hasRedisCode(err, "OOM") {
			require.NoError(t, err)
		}
	}
	t.Fatal("Redis never reached maxmemory")
}

func freeMemory(t *testing.T, rc rueidis.Client) {
	t.Helper()
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(fillerKey).Build()).Error())
}

// TestFaultOOMRefusesNewLock takes a new lock on a Redis at maxmemory: the
// acquire script carries no allow-oom flag, so Redis refuses it, and Lock
// must fail at once with an error that wraps the OOM reply (OOM is not a
// passing refusal to resend), leaving no key, no subscription and no
// goroutine behind (TestMain runs goleak). Once memory is freed, Lock works.
func TestFaultOOMRefusesNewLock(t *testing.T) {
	node := faultNode(t, oomArgs...)
	raw := node.Client(t)
	name := redistest.LockName(t)
	mu := newRlock(t, node.Client(t)).Mutex(name)
	fillMemory(t, raw)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	lctx, err := mu.Lock(ctx)
	require.Error(t, err, "Lock at maxmemory")
	assert.True(t, hasRedisCode(err, "OOM"), "the error wraps Redis's OOM reply: %v", err)
	// A resend would wait for its reply up to the retry timeout (5 s): half
	// of it tells the two apart on a loaded machine too.
	assert.Less(t, time.Since(start), rlock.DefaultRetryTimeout/2, "Lock fails at once instead of resending")
	assert.Equal(t, ctx, lctx, "a failed Lock returns the context it was given")
	assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "no hold is left")
	redistest.AssertNoSubscribers(t, raw, lockKeys(name))

	freeMemory(t, raw)
	lctx, err = mu.Lock(ctx)
	require.NoError(t, err, "Lock once memory is freed")
	require.NoError(t, mu.Unlock(lctx))
}

// TestFaultOOMKeepsHeldLock fills Redis's memory while a lock is held: a
// re-entry is refused like any new acquire, but the hold itself lives on:
// the watchdog's renew script is allowed at maxmemory and keeps the lease
// for several leases, and Unlock's release script (allow-oom too) frees
// the lock.
func TestFaultOOMKeepsHeldLock(t *testing.T) {
	node := faultNode(t, oomArgs...)
	raw := node.Client(t)
	name := redistest.LockName(t)
	mu := newRlock(t, node.Client(t), rlock.WithLeaseTime(watchdogLease)).Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	fillMemory(t, raw)

	_, err = mu.Lock(ctx)
	assert.True(t, hasRedisCode(err, "OOM"), "a re-entry at maxmemory is refused with OOM: %v", err)
	assertHoldCount(t, ctx, mu, 1)

	time.Sleep(3 * watchdogLease) // the thing under test: three leases pass at maxmemory, and only renewals keep the lock
	require.NoError(t, ctx.Err(), "the lock context lives on at maxmemory: %v", context.Cause(ctx))
	lease, err := mu.RemainingLease(ctx)
	require.NoError(t, err)
	assert.Greater(t, lease, watchdogLease/3, "the watchdog renewed the lease three leases after the fill")
	assertHoldCount(t, ctx, mu, 1)

	require.NoError(t, mu.Unlock(ctx), "Unlock at maxmemory")
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the final Unlock ends the lock context")
	assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "the lock is free")
	assert.True(t, hasRedisCode(raw.Do(t.Context(), raw.B().Set().Key("fault:probe").Value("1").Build()).Error(), "OOM"),
		"Redis was still at maxmemory when Unlock ran")
}

// TestFaultOOMCountsLatchDown fills Redis's memory while an Await waits on
// a latch at 1: the CountDown only lowers a count, and is allowed at
// maxmemory (allow-oom), so the latch opens and the Await returns; a
// latch that could not open there would keep its waiters for ever.
func TestFaultOOMCountsLatchDown(t *testing.T) {
	node := faultNode(t, oomArgs...)
	raw := node.Client(t)
	name := redistest.LockName(t)
	latch := newRlock(t, node.Client(t)).CountDownLatch(name)
	set, err := latch.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, set)
	awaited := make(chan error, 1)
	go func() { awaited <- latch.Await(t.Context()) }()
	fillMemory(t, raw)

	require.NoError(t, latch.CountDown(t.Context()), "CountDown at maxmemory")
	n, err := latch.Count(t.Context())
	require.NoError(t, err)
	assert.Zero(t, n, "the CountDown counted")
	select {
	case err := <-awaited:
		require.NoError(t, err, "the Await returns once the latch opened")
	case <-time.After(5 * time.Second):
		t.Fatal("the Await did not return 5 s after the latch opened at maxmemory")
	}
	assert.True(t, hasRedisCode(raw.Do(t.Context(), raw.B().Set().Key("fault:probe").Value("1").Build()).Error(), "OOM"),
		"Redis was still at maxmemory when CountDown ran")
}
