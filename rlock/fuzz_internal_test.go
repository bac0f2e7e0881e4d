package rlock

import (
	"encoding/binary"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/lua"
)

// int64s decodes data as little-endian int64s, dropping a short tail: how
// the reply fuzzers turn fuzzed bytes into a script reply of any length.
func int64s(data []byte) []int64 {
	out := make([]int64, 0, len(data)/8)
	for ; len(data) >= 8; data = data[8:] {
		out = append(out, int64(binary.LittleEndian.Uint64(data)))
	}
	return out
}

// reply encodes a script reply as int64s decodes it, for seeds.
func reply(v ...int64) []byte {
	out := make([]byte, 0, 8*len(v))
	for _, n := range v {
		out = binary.LittleEndian.AppendUint64(out, uint64(n))
	}
	return out
}

// replySeeds are replies of both scripts, well-formed or not.
var replySeeds = [][]byte{
	nil, {1, 2, 3}, reply(0), reply(1), reply(2), reply(3), reply(-1),
	reply(1, 1, 1), reply(1, 2, 7), reply(1, 0, 1), reply(1, -1, 1), reply(1, 1, math.MaxInt64), reply(1, 1, 0),
	reply(0, 30000), reply(0, -1), reply(0, -2), reply(0, 0), reply(0, math.MaxInt64), reply(0, math.MinInt64),
	reply(0, math.MaxInt64/int64(time.Millisecond)+1), reply(0, -(math.MaxInt64/int64(time.Millisecond))-1),
	reply(0, 0), reply(1, 3), reply(2, 0), reply(3, 0), reply(-1, 0), reply(2, 5), reply(1, 0, 0, 0),
}

// FuzzParseGrant feeds any reply to the acquire reply parser: it is either
// refused, or read as the script documents it ({1, count > 0, token},
// {0, pttl} or {3, 0}), with a holder's PTTL kept exact where a Duration
// can hold it and never flipped in sign where it cannot (a waiter sleeps
// that long).
func FuzzParseGrant(f *testing.F) {
	for _, seed := range replySeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := int64s(data)
		g, err := parseGrant(r)
		if err != nil {
			return
		}
		if g.acquired {
			require.Len(t, r, 3)
			assert.Equal(t, int64(1), r[0])
			assert.Positive(t, g.count, "hold count")
			assert.Equal(t, r[1], int64(g.count))
			assert.Equal(t, r[2], g.token)
			return
		}
		if g.gone {
			assert.Equal(t, []int64{int64(lua.NotHeld), 0}, r, "a re-entry of a hold that is gone")
			return
		}
		require.Len(t, r, 2)
		assert.Equal(t, int64(0), r[0])
		const limit = math.MaxInt64 / int64(time.Millisecond)
		switch ms := r[1]; {
		case ms > limit:
			assert.Equal(t, time.Duration(math.MaxInt64), g.pttl, "PTTL %d ms saturates", ms)
		case ms < -limit:
			assert.Equal(t, time.Duration(math.MinInt64), g.pttl, "PTTL %d ms saturates", ms)
		default:
			assert.Equal(t, time.Duration(ms)*time.Millisecond, g.pttl, "PTTL %d ms", ms)
		}
	})
}

// FuzzParseRelease feeds any reply to the release reply parser: it is
// either refused, or one of the three outcomes the script documents, with
// a count left that is positive exactly when the lock is still held.
func FuzzParseRelease(f *testing.F) {
	for _, seed := range replySeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := int64s(data)
		result, left, err := parseRelease(r)
		if err != nil {
			return
		}
		require.Len(t, r, 2)
		assert.Contains(t, []released{notHeld, stillHeld, freed}, result)
		assert.Equal(t, r[0], int64(result))
		assert.Equal(t, r[1], int64(left))
		assert.Equal(t, result == stillHeld, left > 0, "levels left when still held, none otherwise")
	})
}

// FuzzRequestLimits checks, for any retry timeout and lease the options
// accept, the numbers a request carries: a fence outlives every resend of
// its request (an acquire's, then its settling's: two retry timeouts) and a
// lease, and every millisecond argument is a positive integer that Redis
// accepts.
func FuzzRequestLimits(f *testing.F) {
	for _, d := range []time.Duration{
		0, -1, 1, time.Millisecond, DefaultRetryTimeout, time.Hour, math.MaxInt64, math.MaxInt64 / 2,
		(math.MaxInt64 - time.Second) / 2, (math.MaxInt64-time.Second)/2 + 1, math.MinInt64,
	} {
		f.Add(int64(d), int64(d))
	}
	f.Fuzz(func(t *testing.T, retryTimeout, lease int64) {
		cfg := defaultConfig()
		if WithRetryTimeout(time.Duration(retryTimeout))(&cfg) != nil || WithLeaseTime(time.Duration(lease))(&cfg) != nil {
			return
		}
		c := &Client{cfg: cfg}
		life := c.fenceLife()
		assert.True(t, life == math.MaxInt64 || (life-cfg.lease-cfg.retryTimeout >= cfg.retryTimeout),
			"the fence, %v, outlives a lease of %v and two retry timeouts of %v", life, cfg.lease, cfg.retryTimeout)
		for _, d := range []time.Duration{life, time.Duration(lease)} {
			ms, err := strconv.ParseInt(millis(d), 10, 64)
			require.NoError(t, err)
			assert.Equal(t, max(d.Milliseconds(), 1), ms, "millis(%v)", d)
		}
	})
}
