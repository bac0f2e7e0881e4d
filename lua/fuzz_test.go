package lua_test

import (
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

// lockModel is what the acquire, release and renew scripts should do to one
// lock, written plainly in Go.
type lockModel struct {
	holder  string         // the owner holding the lock, or ""
	count   int            // its hold count
	lastSeq int            // the seq of its latest call that applied
	waiters bool           // an acquire was refused while it held
	fences  map[string]int // owner -> highest superseded seq
	counted bool           // the fencing counter exists
	token   int64
}

func (m *lockModel) fence(c call) {
	if c.superseded > m.fences[c.owner] {
		m.fences[c.owner] = c.superseded
	}
}

// acquire is what acquire.lua should answer. A first acquire without a
// counter starts it from Redis's clock, which the model takes from got.
func (m *lockModel) acquire(c call, got []int64) []int64 {
	if m.holder == c.owner {
		if c.seq <= m.lastSeq {
			return reply(lua.Stale, 0)
		}
		m.fence(c)
		m.count, m.lastSeq = c.count, c.seq
		return reply(lua.Granted, int64(c.count), m.token)
	}
	if m.fences[c.owner] >= c.seq {
		return reply(lua.Stale, 0)
	}
	m.fence(c)
	if m.holder != "" {
		m.waiters = true
		return nil // refused, with the holder's PTTL
	}
	if c.count > 1 {
		return reply(lua.NotHeld, 0) // a re-entry of a hold that is gone takes nothing
	}
	if m.counted {
		m.token++
	} else if len(got) == 3 {
		m.counted, m.token = true, got[2]
	}
	m.holder, m.count, m.lastSeq, m.waiters = c.owner, 1, c.seq, false
	return reply(lua.Granted, 1, m.token)
}

// release is what release.lua should answer.
func (m *lockModel) release(c call) []int64 {
	if m.holder != c.owner {
		m.fence(c)
		return reply(lua.NotHeld, 0)
	}
	if c.seq <= m.lastSeq {
		return reply(lua.Stale, 0)
	}
	m.fence(c)
	if c.count > 0 {
		m.count, m.lastSeq = c.count, c.seq
		return reply(lua.StillHeld, int64(c.count))
	}
	m.holder, m.count, m.lastSeq, m.waiters = "", 0, 0, false
	return reply(lua.Freed, 0)
}

// owner is one client of the request protocol, as rlock runs it: one
// request at a time, each call with a fresh seq, superseding the call whose
// reply was lost.
type owner struct {
	name      string
	confirmed int  // the count the owner knows it holds
	unsettled int  // seq of the latest call whose reply it never got
	release   bool // the request in progress, when unsettled, is a release
}

// FuzzProtocol runs two owners of one lock through a fuzzed interleaving of
// the request protocol against real Redis, and checks every reply, and the
// state after every step, against lockModel. Each op is one byte: bit 0
// picks the owner, bits 1-3 the step:
//
//	0, 1  a new acquire (0) or release (1), whose call is answered
//	2     a new acquire or release whose call runs, but its reply is lost
//	3     a new acquire or release whose call is held back, unsent
//	4     resend the request in progress (a new call superseding the last)
//	5     give up the request in progress: settle it back to the count known
//	6     deliver the oldest held-back call now: a copy arriving late
//	7     renew
//
// Beyond the model, an owner that has nothing unsettled holds in Redis
// exactly what it believes it holds, whatever late copies arrive: no call
// applies twice, none applies after a later one, and none applies after its
// request was given up.
func FuzzProtocol(f *testing.F) {
	f.Add([]byte{0, 2, 8, 1, 3})
	f.Add([]byte{4, 8, 12, 10, 2})
	f.Add([]byte{6, 10, 12, 1, 3, 0})
	f.Add([]byte{0, 0, 6, 8, 12, 2, 12, 12, 2})
	f.Add([]byte{6, 7, 10, 11, 12, 13, 0, 1, 12, 13, 14})
	f.Add([]byte{0, 1, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15})
	rc := redistest.Shared(f).Client(f)

	f.Fuzz(func(t *testing.T, ops []byte) {
		k := keys.New("fuzz:", uuid.NewString())
		t.Cleanup(func() {
			rc.Do(t.Context(), rc.B().Del().Key(k.Hash, k.Token, k.Fence).Build())
		})
		model := &lockModel{fences: map[string]int{}}
		owners := [2]*owner{{name: "a"}, {name: "b"}}
		seq := 0
		var held []call
		var heldRelease []bool

		// run sends c and checks the reply against the model; it returns
		// the reply.
		run := func(c call, release bool, what string) []int64 {
			if release {
				reply := c.release(t, rc, k)
				assert.Equal(t, model.release(c), reply, "%s: release %+v", what, c)
				return reply
			}
			reply := c.acquire(t, rc, k)
			if want := model.acquire(c, reply); want != nil {
				assert.Equal(t, want, reply, "%s: acquire %+v", what, c)
				return reply
			}
			require.Len(t, reply, 2, "%s: acquire %+v is refused", what, c)
			assert.Equal(t, lua.Refused, lua.Code(reply[0]), "%s: acquire %+v is refused", what, c)
			assert.Positive(t, reply[1], "%s: the holder's PTTL", what)
			return reply
		}
		// request makes the next call of o's request: a new one, a resend
		// or a settling release; fate says what becomes of it.
		request := func(o *owner, release bool, count int, fate int, what string) {
			seq++
			c := call{owner: o.name, seq: seq, count: count, superseded: o.unsettled}
			o.release = release
			switch fate {
			case 2: // runs, reply lost
				run(c, release, what)
				o.unsettled = c.seq
				return
			case 3: // held back
				held = append(held, c)
				heldRelease = append(heldRelease, release)
				o.unsettled = c.seq
				return
			}
			reply := run(c, release, what)
			o.unsettled = 0
			switch {
			case release:
				o.confirmed = int(reply[1])
			case lua.Code(reply[0]) == lua.Granted:
				o.confirmed = int(reply[1])
			case lua.Code(reply[0]) == lua.NotHeld:
				o.confirmed = 0
			}
		}

		for i, op := range ops[:min(len(ops), 64)] {
			o := owners[op&1]
			what := "op " + strconv.Itoa(i)
			switch step := int(op>>1) % 8; step {
			case 0, 1, 2, 3:
				if o.unsettled != 0 {
					continue // one request at a time
				}
				release := step == 1 || (step >= 2 && o.confirmed > 0 && op&16 != 0)
				if release && o.confirmed == 0 {
					continue
				}
				count := o.confirmed + 1
				if release {
					count = o.confirmed - 1
				}
				request(o, release, count, step, what)
			case 4:
				if o.unsettled == 0 {
					continue
				}
				count := o.confirmed + 1
				if o.release {
					count = o.confirmed - 1
				}
				request(o, o.release, count, 0, what+" resend")
			case 5:
				if o.unsettled == 0 {
					continue
				}
				request(o, true, o.confirmed, 0, what+" settle")
			case 6:
				if len(held) == 0 {
					continue
				}
				c, release := held[0], heldRelease[0]
				held, heldRelease = held[1:], heldRelease[1:]
				run(c, release, what+" late copy")
			case 7:
				reply, err := lua.Renew.Exec(t.Context(), rc, []string{k.Hash}, []string{"60000", o.name}).AsIntSlice()
				require.NoError(t, err)
				want := int64(0)
				if model.holder == o.name {
					want = 1
				}
				assert.Equal(t, []int64{want}, reply, "%s: renew by %s", what, o.name)
			}

			for _, o := range owners {
				n, err := rc.Do(t.Context(), rc.B().Hget().Key(k.Hash).Field(o.name).Build()).AsInt64()
				if rueidis.IsRedisNil(err) {
					n, err = 0, nil
				}
				require.NoError(t, err)
				want := 0
				if model.holder == o.name {
					want = model.count
				}
				assert.Equal(t, int64(want), n, "%s: %s's count in Redis", what, o.name)
				if o.unsettled == 0 {
					assert.Equal(t, int64(o.confirmed), n, "%s: settled owner %s holds what it believes", what, o.name)
				}
			}
			if t.Failed() {
				return
			}
		}
		if model.holder != "" {
			ms, err := rc.Do(t.Context(), rc.B().Pttl().Key(k.Hash).Build()).AsInt64()
			require.NoError(t, err)
			assert.Positive(t, ms, "a held lock has a lease")
			assert.LessOrEqual(t, ms, int64(time.Minute/time.Millisecond), "within the longest lease asked")
		}
	})
}
