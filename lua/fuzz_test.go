package lua_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// The arguments every fuzzed script call carries: long enough that nothing
// expires while one input runs.
const (
	fuzzLease = "60000"
	fuzzLatch = "60000"
)

// maxExact is the largest fencing counter whose next value a script still
// reads exactly: Lua numbers are doubles.
const maxExact = 1<<53 - 1

// lockModel is what the acquire, release and renew scripts should do to one
// lock, written plainly in Go.
type lockModel struct {
	counts  map[string]int64   // owner field -> hold count; one owner at most
	counted bool               // the fencing counter exists
	token   int64              // the fencing counter, when it exists
	floor   int64              // the least token a counter started from the clock may give
	latched map[string][]int64 // request id -> the reply it was given first
}

// acquire is what acquire.lua should answer to request id from owner, or
// nil for a refusal. got is what it did answer: a first acquire without a
// counter starts it from Redis's clock, which the model knows only from
// below, so it takes that token from got if it is at least floor.
func (m *lockModel) acquire(owner, id string, got []int64) []int64 {
	if r, ok := m.latched[id]; ok {
		return r
	}
	for other, n := range m.counts {
		if other != owner && n > 0 {
			return nil
		}
	}
	m.counts[owner]++
	switch {
	case m.counts[owner] > 1:
	case m.counted:
		m.token++
	default:
		m.counted, m.token = true, m.floor
		if len(got) == 3 && got[2] >= m.floor {
			m.token = got[2]
		}
	}
	r := []int64{1, m.counts[owner], m.token}
	m.latched[id] = r
	return r
}

// release is what release.lua should answer to request id from owner.
func (m *lockModel) release(owner, id string) []int64 {
	if r, ok := m.latched[id]; ok {
		return r
	}
	r := []int64{0, 0}
	switch n := m.counts[owner]; {
	case n > 1:
		m.counts[owner]--
		r = []int64{1, n - 1}
	case n == 1:
		delete(m.counts, owner)
		r = []int64{2, 0}
	}
	m.latched[id] = r
	return r
}

// FuzzScripts runs a fuzzed sequence of acquires, releases, resends of an
// earlier request and renewals by two owners with fuzzed field names on one
// lock, and checks every reply and the final state in Redis against
// lockModel: re-entry counts, mutual exclusion, fencing tokens that rise
// by one on every first acquire (from start, or from Redis's clock when
// start is negative: no counter yet), and resent requests answered with
// their first reply, never applied twice.
//
// Each op is one byte: bit 0 picks the owner, the next bits the call
// (acquire, release, resend, renew). At most 64 ops are run.
func FuzzScripts(f *testing.F) {
	f.Add([]byte{0, 2, 4}, "a", "b", int64(0))
	f.Add([]byte{0, 0, 4, 4, 2, 2, 4, 1, 3, 5, 6, 7}, "a", "b", int64(41))
	f.Add([]byte{0, 1, 4, 5, 2, 3, 4, 6, 7}, "same", "same", int64(7))
	f.Add([]byte{0, 4, 2, 4, 4, 4}, "", "{}", int64(maxExact-10))
	f.Add([]byte{0, 4, 2, 0, 4}, "ключ🔒", "a\x00b", int64(123456789012344))
	f.Add([]byte{1, 1, 5, 3, 3, 7, 6}, "x", "y", int64(-1))
	f.Add([]byte{0, 4, 0, 2, 2, 1, 4, 3, 5}, "a", "b", int64(-1))
	rc := redistest.Shared(f).Client(f)

	f.Fuzz(func(t *testing.T, ops []byte, fieldA, fieldB string, start int64) {
		k := keys.New("fuzz:", uuid.NewString())
		owners := [2]string{fieldA, fieldB}
		model := &lockModel{counts: map[string]int64{}, floor: time.Now().UnixMicro(), latched: map[string][]int64{}}
		do := func(cmd rueidis.Completed) rueidis.RedisResult { return rc.Do(t.Context(), cmd) }
		if start >= 0 {
			model.counted, model.token = true, start%maxExact
			require.NoError(t, do(rc.B().Set().Key(k.Token).Value(strconv.FormatInt(model.token, 10)).Build()).Error())
		}
		var requests []string
		t.Cleanup(func() {
			latches := make([]string, len(requests))
			for i, id := range requests {
				latches[i] = k.Latch(id)
			}
			assert.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(k.Hash, k.Token).Key(latches...).Build()).Error())
		})

		type request struct {
			release   bool
			owner, id string
		}
		var last *request
		for i, op := range ops[:min(len(ops), 64)] {
			owner := owners[op&1]
			req := &request{owner: owner, id: strconv.Itoa(i)}
			switch (op >> 1) % 4 {
			case 1:
				req.release = true
			case 2:
				if last != nil {
					req = last
				}
			case 3:
				reply, err := lua.Renew.Exec(t.Context(), rc, []string{k.Hash}, []string{fuzzLease, owner}).AsIntSlice()
				require.NoError(t, err)
				held := int64(0)
				if model.counts[owner] > 0 {
					held = 1
				}
				assert.Equal(t, []int64{held}, reply, "op %d: renew by %q", i, owner)
				continue
			}
			if req != last {
				requests = append(requests, req.id)
			}
			last = req

			scriptKeys := []string{k.Hash, "", k.Latch(req.id)}
			if req.release {
				scriptKeys[1] = k.Channel
				reply, err := lua.Release.Exec(t.Context(), rc, scriptKeys, []string{req.owner, fuzzLease, fuzzLatch, "publish"}).AsIntSlice()
				require.NoError(t, err)
				assert.Equal(t, model.release(req.owner, req.id), reply, "op %d: release %s by %q", i, req.id, req.owner)
				continue
			}
			scriptKeys[1] = k.Token
			reply, err := lua.Acquire.Exec(t.Context(), rc, scriptKeys, []string{req.owner, fuzzLease, fuzzLatch}).AsIntSlice()
			require.NoError(t, err)
			if want := model.acquire(req.owner, req.id, reply); want != nil {
				assert.Equal(t, want, reply, "op %d: acquire %s by %q", i, req.id, req.owner)
				continue
			}
			require.Len(t, reply, 2, "op %d: acquire %s by %q is refused", i, req.id, req.owner)
			assert.Equal(t, int64(0), reply[0], "op %d: acquire %s by %q is refused", i, req.id, req.owner)
			assert.Positive(t, reply[1], "op %d: the holder's PTTL", i)
			assert.LessOrEqual(t, reply[1], int64(60000), "op %d: the holder's PTTL", i)
		}

		held, err := do(rc.B().Hgetall().Key(k.Hash).Build()).AsIntMap()
		require.NoError(t, err)
		want := map[string]int64{}
		for owner, n := range model.counts {
			want[owner] = n
		}
		assert.Equal(t, want, held, "hold counts in Redis")
		token, err := do(rc.B().Get().Key(k.Token).Build()).AsInt64()
		if !model.counted {
			assert.True(t, rueidis.IsRedisNil(err), "no fencing counter before a first acquire: %v", err)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, model.token, token, "fencing counter")
	})
}
