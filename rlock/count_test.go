package rlock_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestCountsStayWithinMaxCount: a Semaphore's permits and a
// CountDownLatch's count are refused beyond MaxCount (2^53), which Redis's
// scripts hold exactly, and read back exactly up to it. (TrySetPermits
// of MaxInt64 read back as MinInt64, 2^53+1 as 2^53, and a latch set to
// 2^62 stored its count as "4.6116860184273879e+18" once counted down,
// which no call could read or reset.)
func TestCountsStayWithinMaxCount(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("counts beyond 2^53 are not ints on a 32-bit machine; the limit is MaxCount's there too")
	}
	ctx := t.Context()
	c := sharedClient(t)
	name := redistest.LockName(t)
	// Converted at run time, so that the file builds where int is 32 bits.
	ints := func(ns ...int64) []int {
		out := make([]int, len(ns))
		for i, n := range ns {
			out[i] = int(n)
		}
		return out
	}
	counts := ints(rlock.MaxCount, rlock.MaxCount+1, 1<<62, math.MaxInt64, math.MinInt64)
	most, beyond, huge, maxInt, minInt := counts[0], counts[1], counts[2], counts[3], counts[4]

	t.Run("Semaphore", func(t *testing.T) {
		s := c.Semaphore(name)
		for _, n := range []int{beyond, maxInt, 0, -1} {
			_, err := s.TrySetPermits(ctx, n)
			require.ErrorIs(t, err, rlock.ErrInvalidArgument, "TrySetPermits(%d)", n)
		}
		set, err := s.TrySetPermits(ctx, most)
		require.NoError(t, err)
		require.True(t, set, "nothing was set before")
		available := func() int {
			n, err := s.Available(ctx)
			require.NoError(t, err)
			return n
		}
		require.Equal(t, most, available())

		for _, n := range []int{1, beyond, minInt, maxInt} {
			require.ErrorIs(t, s.AddPermits(ctx, n), rlock.ErrInvalidArgument, "AddPermits(%d) from MaxCount", n)
		}
		require.Equal(t, most, available(), "a refused AddPermits changes nothing")
		require.NoError(t, s.AddPermits(ctx, -most))
		require.NoError(t, s.AddPermits(ctx, -most), "down to -MaxCount")
		require.Equal(t, -most, available())
		require.ErrorIs(t, s.AddPermits(ctx, -1), rlock.ErrInvalidArgument, "below -MaxCount")
		require.NoError(t, s.AddPermits(ctx, most))
		require.NoError(t, s.AddPermits(ctx, 1))
		assert.Equal(t, 1, available())
		permit, err := s.Acquire(ctx)
		require.NoError(t, err, "the one permit left")

		// Held while the permits go down to -MaxCount: one fewer free,
		// exactly, as Inspect counts. (Available subtracted in Lua, whose
		// -2^53-1 is -2^53.)
		require.NoError(t, s.AddPermits(ctx, -1))
		require.NoError(t, s.AddPermits(ctx, -most))
		st, err := s.Inspect(ctx)
		require.NoError(t, err)
		require.Equal(t, -most-1, st.Available, "Inspect")
		assert.Equal(t, -most-1, available(), "Available agrees with Inspect")
		require.NoError(t, s.Release(permit))
		assert.Equal(t, -most, available())
	})

	t.Run("CountDownLatch", func(t *testing.T) {
		l := c.CountDownLatch(name)
		for _, n := range []int{beyond, huge, maxInt, 0} {
			_, err := l.TrySetCount(ctx, n)
			require.ErrorIs(t, err, rlock.ErrInvalidArgument, "TrySetCount(%d)", n)
		}
		set, err := l.TrySetCount(ctx, most)
		require.NoError(t, err)
		require.True(t, set, "nothing was set before")
		require.NoError(t, l.CountDown(ctx))
		n, err := l.Count(ctx)
		require.NoError(t, err)
		assert.Equal(t, most-1, n, "counted down exactly")
	})
}
