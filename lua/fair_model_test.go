package lua_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// fairModel is the queue and holder a fair lock should have, by the
// contracts of fair_acquire.lua, fair_release.lua and queue.lua.
type fairModel struct {
	holder string
	q      []string
	dead   map[string]bool
}

func (m *fairModel) index(o string) int {
	for i, w := range m.q {
		if w == o {
			return i
		}
	}
	return -1
}

func (m *fairModel) remove(o string) {
	if i := m.index(o); i >= 0 {
		m.q = append(m.q[:i:i], m.q[i+1:]...)
		delete(m.dead, o)
	}
}

func (m *fairModel) headLive() string {
	for len(m.q) > 0 && m.dead[m.q[0]] {
		m.remove(m.q[0])
	}
	if len(m.q) == 0 {
		return ""
	}
	return m.q[0]
}

func (m *fairModel) handOn() {
	if first := m.headLive(); first != "" {
		m.holder = first
		m.remove(first)
	}
}

// TestFairQueueModel drives fair_acquire and fair_release with random
// waiting acquires, releases, give-ups, lock expiries and entry expiries,
// and checks after every step the holder, the live queue in order, and the
// queue hash's exact set of fields (links, '#head', '#last', nothing left
// behind).
func TestFairQueueModel(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	owners := []string{"c1:a", "c1:b", "c2:c", "c2:d", "c3:e"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 30; round++ {
		k := lockKeys(t)
		m := &fairModel{dead: map[string]bool{}}
		seq := 0
		next := func() int { seq++; return seq }
		for step := 0; step < 60; step++ {
			o := owners[rng.IntN(len(owners))]
			var what string
			switch op := rng.IntN(10); {
			case op < 4 && o != m.holder:
				what = "acquire " + o
				want := lua.Refused
				if m.index(o) >= 0 && m.dead[o] {
					m.remove(o)
				}
				if m.holder == "" {
					first := m.headLive()
					if first == "" || first == o {
						m.remove(o)
						m.holder = o
						want = lua.Granted
					} else {
						m.holder = first
						m.remove(first)
					}
				}
				if want == lua.Refused && m.index(o) < 0 {
					m.q = append(m.q, o)
				}
				got := call{owner: o, seq: next(), count: 1, waiting: true}.acquireBy(t, rc, k, lua.FairAcquire)
				require.Equal(t, want, lua.Code(got[0]), "round %d step %d: %s: %v", round, step, what, got)
			case op < 6 && m.holder != "":
				h := m.holder
				what = "release " + h
				m.holder = ""
				m.handOn()
				got := call{owner: h, seq: next()}.releaseBy(t, rc, k, lua.FairRelease)
				require.Equal(t, reply(lua.Freed, 0), got, "round %d step %d: %s", round, step, what)
			case op < 8 && o != m.holder:
				what = "give up " + o
				m.remove(o)
				if m.holder == "" {
					m.handOn()
				}
				got := call{owner: o, seq: next()}.releaseBy(t, rc, k, lua.FairRelease)
				require.Equal(t, reply(lua.NotHeld, 0), got, "round %d step %d: %s", round, step, what)
			case op == 8 && m.holder != "":
				what = "lock expires"
				m.holder = ""
				require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error())
			case op == 9 && m.index(o) >= 0 && !m.dead[o]:
				what = "entry expires " + o
				m.dead[o] = true
				require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Queue).FieldValue().FieldValue(o+"#exp", "1").Build()).Error())
			default:
				continue
			}
			checkFair(t, rc, k.Hash, k.Queue, m, fmt.Sprintf("round %d step %d after %s", round, step, what))
		}
	}
}

func checkFair(t *testing.T, rc rueidis.Client, hash, queue string, m *fairModel, at string) {
	t.Helper()
	h, err := rc.Do(t.Context(), rc.B().Hgetall().Key(hash).Build()).AsStrMap()
	require.NoError(t, err)
	holder := ""
	for f := range h {
		if !strings.Contains(f, "#") {
			require.Empty(t, holder, "%s: two holders in %v", at, h)
			holder = f
		}
	}
	require.Equal(t, m.holder, holder, "%s: holder", at)
	q, err := rc.Do(t.Context(), rc.B().Hgetall().Key(queue).Build()).AsStrMap()
	require.NoError(t, err)
	want := map[string]bool{}
	for i, w := range m.q {
		want[w] = true
		want[w+"#exp"], want[w+"#seq"], want[w+"#lease"], want[w+"#wake"] = true, true, true, true
		if i > 0 {
			want[w+"#prev"] = true
		}
		if i < len(m.q)-1 {
			want[w+"#next"] = true
		}
	}
	if len(m.q) > 0 {
		want["#head"], want["#last"] = true, true
		require.Equal(t, m.q[0], q["#head"], "%s: #head in %v", at, q)
		require.Equal(t, m.q[len(m.q)-1], q["#last"], "%s: #last in %v", at, q)
	}
	for i, w := range m.q {
		if i > 0 {
			require.Equal(t, m.q[i-1], q[w+"#prev"], "%s: %s#prev in %v", at, w, q)
		}
		if i < len(m.q)-1 {
			require.Equal(t, m.q[i+1], q[w+"#next"], "%s: %s#next in %v", at, w, q)
		}
	}
	got := map[string]bool{}
	for f := range q {
		got[f] = true
	}
	require.Equal(t, want, got, "%s: the queue's fields (model %v)", at, m.q)
}
