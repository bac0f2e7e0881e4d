package rlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// fuzzPrefix keeps the keys of one fuzzing process apart from those of its
// sibling workers and of earlier runs, so that every valid name is free.
var fuzzPrefix = "fuzz:" + uuid.NewString() + ":"

// FuzzMutexName takes a lock under any name: the empty name is refused with
// ErrInvalidName by every call; any other string, however odd, is a lock
// that can be taken, re-entered and released like any other.
func FuzzMutexName(f *testing.F) {
	for _, name := range []string{
		"", "}", "}x", "a", "{", "{}", "{}x", "x{}", "{a}", "{a}b", "a{b}c", "a}b", "{{a}}", "}{",
		" ", "\x00", "a\x00b", "\xff\xfe", "ключ", "🔒", "日本語{タグ}", "\r\n", "*", "?", "[a-z]",
		strings.Repeat("n", 64<<10),
	} {
		f.Add(name)
	}
	c, err := rlock.New(redistest.Shared(f).Client(f), rlock.WithKeyPrefix(fuzzPrefix))
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, c.Close()) })

	f.Fuzz(func(t *testing.T, name string) {
		mu := c.Mutex(name)
		assert.Equal(t, name, mu.Name())
		ctx, ok, err := mu.TryLock(t.Context(), 0, 0)
		if name == "" {
			assert.ErrorIs(t, err, rlock.ErrInvalidName, "TryLock")
			_, err = mu.Lock(t.Context())
			assert.ErrorIs(t, err, rlock.ErrInvalidName, "Lock")
			assert.ErrorIs(t, mu.Unlock(t.Context()), rlock.ErrInvalidName, "Unlock")
			_, err = mu.IsLocked(t.Context())
			assert.ErrorIs(t, err, rlock.ErrInvalidName, "IsLocked")
			return
		}
		require.NoError(t, err)
		require.True(t, ok, "a free lock is taken at once")
		inner, err := mu.Lock(ctx)
		require.NoError(t, err, "re-entry")
		n, err := mu.HoldCount(inner)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		require.NoError(t, mu.Unlock(inner))
		require.NoError(t, mu.Unlock(ctx))
		assert.ErrorIs(t, ctx.Err(), context.Canceled, "the final Unlock ends the lock context")
		locked, err := mu.IsLocked(t.Context())
		require.NoError(t, err)
		assert.False(t, locked)
	})
}

// FuzzDurations feeds any durations to the options and calls that take
// them: a duration out of range is refused with ErrInvalidDuration, any
// other is accepted, up to the largest time.Duration, and nothing panics.
// A retry timeout shorter than a round trip to Redis is accepted too, but
// then bounds every request: such calls may fail, cleanly, with
// context.DeadlineExceeded.
func FuzzDurations(f *testing.F) {
	const huge = time.Duration(math.MaxInt64)
	for _, d := range [][5]time.Duration{
		{rlock.DefaultLeaseTime, rlock.DefaultRetryTimeout, time.Second, 0, 0},
		{0, 0, 0, 0, 0},
		{-1, -1, -1, -1, -1},
		{math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64},
		{huge, huge, huge, huge, huge},
		{rlock.MinLease, 1, rlock.MinLease, 1, rlock.MinLease},
		{rlock.MinLease - 1, time.Nanosecond, rlock.MinLease - 1, time.Millisecond, rlock.MinLease - 1},
		{time.Millisecond, time.Hour, 1, time.Nanosecond, 1},
		{100 * 365 * 24 * time.Hour, huge / 2, huge - 1, time.Second, -time.Second},
	} {
		f.Add(int64(d[0]), int64(d[1]), int64(d[2]), int64(d[3]), int64(d[4]))
	}
	rc := redistest.Shared(f).Client(f)

	f.Fuzz(func(t *testing.T, leaseTime, retryTimeout, lockFor, wait, tryLease int64) {
		c, err := rlock.New(rc, rlock.WithKeyPrefix(fuzzPrefix),
			rlock.WithLeaseTime(time.Duration(leaseTime)), rlock.WithRetryTimeout(time.Duration(retryTimeout)))
		if time.Duration(leaseTime) < rlock.MinLease || retryTimeout <= 0 {
			assert.ErrorIs(t, err, rlock.ErrInvalidDuration, "New")
			assert.Nil(t, c)
			return
		}
		require.NoError(t, err, "New")
		defer func() { require.NoError(t, c.Close()) }()
		// succeeded checks a call's error: only a short retry timeout
		// excuses a timeout.
		succeeded := func(err error, call string) bool {
			if time.Duration(retryTimeout) < time.Second && errors.Is(err, context.DeadlineExceeded) {
				return false
			}
			require.NoError(t, err, call)
			return true
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()

		mu := fuzzMutex(t, c, rc)
		taken := time.Now()
		lctx, err := mu.LockFor(ctx, time.Duration(lockFor))
		if time.Duration(lockFor) < rlock.MinLease {
			assert.ErrorIs(t, err, rlock.ErrInvalidDuration, "LockFor")
		} else if succeeded(err, "LockFor") {
			unlock(t, mu, lctx, taken, time.Duration(lockFor))
		}

		mu = fuzzMutex(t, c, rc)
		taken = time.Now()
		lctx, ok, err := mu.TryLock(ctx, time.Duration(wait), time.Duration(tryLease))
		if wait < 0 || (tryLease > 0 && time.Duration(tryLease) < rlock.MinLease) {
			assert.ErrorIs(t, err, rlock.ErrInvalidDuration, "TryLock")
		} else if succeeded(err, "TryLock") {
			require.True(t, ok, "a free lock is taken at once")
			unlock(t, mu, lctx, taken, max(time.Duration(tryLease), 0))
		}
	})
}

// fuzzMutex returns a Mutex of c on a lock of its own, whose keys are
// deleted when t ends: a fuzzed lease or retry timeout may leave a lock
// held, or a fence, for years.
func fuzzMutex(t *testing.T, c *rlock.Client, rc rueidis.Client) *rlock.Mutex {
	name := uuid.NewString()
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := rc.Do(ctx, rc.B().Keys().Pattern(fuzzPrefix+"{"+name+"}*").Build()).AsStrSlice()
		require.NoError(t, err)
		if len(keys) > 0 {
			require.NoError(t, rc.Do(ctx, rc.B().Del().Key(keys...).Build()).Error())
		}
	})
	return c.Mutex(name)
}

// unlock releases a lock taken once, at taken, for lease (0: the
// watchdog's). Only a lease that may have run out in Redis excuses
// ErrNotHeld.
func unlock(t *testing.T, mu *rlock.Mutex, ctx context.Context, taken time.Time, lease time.Duration) {
	t.Helper()
	err := mu.Unlock(ctx)
	if lease > 0 && errors.Is(err, rlock.ErrNotHeld) {
		assert.GreaterOrEqual(t, time.Since(taken), lease, "ErrNotHeld before the lease ran out")
		return
	}
	assert.NoError(t, err, "Unlock")
}
