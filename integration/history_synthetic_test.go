package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// synth builds a history by hand, with the store state it implies, so that
// the checks can be shown to catch the bugs they are for. Times are in
// milliseconds; owners are "<proc>.<worker>.<iteration>".
type synth struct {
	ops     []Op
	log     []fencedEntry
	counter int64
	last    int64 // end of the counter's latest write
}

func procOf(owner string) string {
	proc, _, _ := strings.Cut(owner, ".")
	return proc
}

func (s *synth) add(kind, owner string, token, start, end int64, outcome string) *Op {
	const ms = int64(time.Millisecond)
	s.ops = append(s.ops, Op{Kind: kind, Proc: procOf(owner), Owner: owner, Token: token,
		Start: start * ms, End: end * ms, Outcome: outcome})
	return &s.ops[len(s.ops)-1]
}

func (s *synth) acquire(owner string, token, start, end int64) {
	s.add(opAcquire, owner, token, start, end, outOK).Depth = 1
}

func (s *synth) write(owner string, token, start, end int64, outcome string) {
	s.add(opWrite, owner, token, start, end, outcome)
	if outcome == outOK {
		s.log = append(s.log, fencedEntry{token: token, owner: owner})
	}
}

func (s *synth) section(owner string, token, start, end, read int64) {
	s.add(opSection, owner, token, start, end, outOK).Read = read
	if end > s.last {
		s.counter, s.last = read+1, end
	}
}

func (s *synth) release(owner string, token, start, end int64, outcome string) {
	s.add(opRelease, owner, token, start, end, outcome).Final = true
}

func (s *synth) lost(owner string, token, acquireStart, at int64) {
	s.add(opLost, owner, token, acquireStart, at, outOK)
}

// hold is a clean hold from from to to: acquire, write, count (reading
// read), release.
func (s *synth) hold(owner string, token, from, to, read int64) {
	s.acquire(owner, token, from, from+1)
	s.write(owner, token, from+2, from+3, outOK)
	s.section(owner, token, from+4, from+5, read)
	s.release(owner, token, to, to+1, outOK)
}

func (s *synth) check() verdict {
	return checkHistory(s.ops, storeState{log: s.log, counter: s.counter}, linearizeTimeout)
}

// TestHistoryChecks feeds the checks histories with planted bugs, and
// expects each bug reported; the clean ones must pass.
func TestHistoryChecks(t *testing.T) {
	cases := []struct {
		name    string
		history func(s *synth)
		want    []string // fragments of expected violations; none: a clean history
	}{
		{"Clean", func(s *synth) {
			s.hold("p.w0.0", 1, 0, 10, 0)
			s.hold("c0.w0.0", 2, 20, 30, 1)
		}, nil},
		{"LostHoldHandedOn", func(s *synth) {
			// The holder saw its loss before the next one acquired.
			s.acquire("p.w0.0", 1, 0, 1)
			s.write("p.w0.0", 1, 2, 3, outOK)
			s.lost("p.w0.0", 1, 0, 9)
			s.release("p.w0.0", 1, 40, 41, outFailed)
			s.hold("c0.w0.0", 2, 10, 30, 0)
		}, nil},
		{"GrantedTwice", func(s *synth) {
			// The owner check is gone: a second owner gets in while the
			// first holds, and both count in turn.
			s.hold("p.w0.0", 1, 0, 20, 0)
			s.hold("c0.w0.0", 2, 10, 30, 1)
		}, []string{"overlap", "porcupine"}},
		{"LostUpdate", func(s *synth) {
			s.acquire("p.w0.0", 1, 0, 1)
			s.acquire("c0.w0.0", 2, 2, 3)
			s.section("p.w0.0", 1, 4, 8, 0)
			s.section("c0.w0.0", 2, 5, 9, 0)
			s.release("p.w0.0", 1, 10, 11, outOK)
			s.release("c0.w0.0", 2, 12, 13, outOK)
		}, []string{"overlap", "lost update", "counter: 1 after 2", "porcupine"}},
		{"LossSeenLate", func(s *synth) {
			// The holder's lock context ended only after another owner
			// had taken the lock.
			s.acquire("p.w0.0", 1, 0, 1)
			s.lost("p.w0.0", 1, 0, 25)
			s.release("p.w0.0", 1, 26, 27, outFailed)
			s.hold("c0.w0.0", 2, 10, 30, 0)
		}, []string{"overlap"}},
		{"StaleWriteAccepted", func(s *synth) {
			s.acquire("p.w0.0", 1, 0, 1)
			s.lost("p.w0.0", 1, 0, 9)
			s.hold("c0.w0.0", 2, 10, 30, 0)
			s.write("p.w0.0", 1, 35, 36, outOK) // the store forgot to compare tokens
			s.release("p.w0.0", 1, 40, 41, outFailed)
		}, []string{"stale write accepted"}},
		{"TokenWentBack", func(s *synth) {
			// Redis lost the counter and started again from 1.
			s.hold("p.w0.0", 5, 0, 10, 0)
			s.acquire("c0.w0.0", 1, 20, 21)
			s.write("c0.w0.0", 1, 22, 23, outFailed)
			s.section("c0.w0.0", 1, 24, 25, 1)
			s.release("c0.w0.0", 1, 30, 31, outOK)
		}, []string{"token order", "write rejected in its hold's window", "porcupine"}},
		{"FrozenHolderIdle", func(s *synth) {
			// Frozen while holding, thawed after another owner took the
			// lock: it saw its loss first, and its stale write was refused.
			s.acquire("c0.w0.0", 1, 0, 1)
			s.add(opFreeze, "c0", 0, 5, 100, "")
			s.hold("p.w0.0", 2, 50, 60, 0)
			s.lost("c0.w0.0", 1, 0, 101)
			s.write("c0.w0.0", 1, 150, 151, outFailed)
			s.release("c0.w0.0", 1, 160, 161, outFailed)
		}, nil},
		{"FrozenHolderActs", func(s *synth) {
			// Thawed, it counts before it sees its loss.
			s.acquire("c0.w0.0", 1, 0, 1)
			s.add(opFreeze, "c0", 0, 5, 100, "")
			s.hold("p.w0.0", 2, 50, 60, 0)
			s.section("c0.w0.0", 1, 100, 102, 1)
			s.lost("c0.w0.0", 1, 0, 103)
			s.release("c0.w0.0", 1, 160, 161, outFailed)
		}, []string{"overlap"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &synth{}
			tc.history(s)
			v := s.check()
			if tc.want == nil {
				assert.Empty(t, v.violations, "a clean history passes")
				return
			}
			all := strings.Join(v.violations, "\n")
			t.Logf("reported:\n%s", all)
			for _, want := range tc.want {
				assert.Contains(t, all, want, "the planted bug is reported")
			}
		})
	}
}
