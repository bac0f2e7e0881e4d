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
	calls   int64 // the last call number given to an invocation
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

// invoke adds the invocation of a call of kind by owner at start, as a
// worker writes it before it sends the request, and returns its number.
// The call's completion is an op with that Call (see completed); a killed
// process leaves none.
func (s *synth) invoke(kind, owner string, token, start int64) int64 {
	s.calls++
	s.add(kind, owner, token, start, 0, outInvoked).Call = s.calls
	return s.calls
}

// invokeRelease adds the invocation of owner's final release at start.
func (s *synth) invokeRelease(owner string, token, start int64) int64 {
	call := s.invoke(opRelease, owner, token, start)
	s.ops[len(s.ops)-1].Final = true
	return call
}

// completed makes the last op added the completion of call.
func (s *synth) completed(call int64) {
	s.ops[len(s.ops)-1].Call = call
}

// killed adds the harness's SIGKILL of proc, dead by end.
func (s *synth) killed(proc string, start, end int64) {
	op := s.add(opKill, proc, 0, start, end, "")
	op.Owner, op.Detail = "", "SIGKILL"
}

// killedMidRelease is the shape of a CI failure of
// TestReliabilityHolderKilled/fixed-lease: two workers of the killed
// process c0 hold in turn (tokens 132 and 133, the second's acquire
// returning 5 ms after the first's), and the kill comes 9 ms later, before
// the first worker's Unlock, which had freed the lock, returned. With
// invoked, the first worker's history has the Unlock's invocation, as a
// worker writes it before sending; without, it has nothing after the
// section. After the kill, the second's fixed 800 ms lease runs out and a
// worker of p takes the lock.
func killedMidRelease(invoked bool) func(s *synth) {
	return func(s *synth) {
		s.acquire("c0.c0.w0.7", 132, 0, 1)
		s.write("c0.c0.w0.7", 132, 1, 2, outOK)
		s.section("c0.c0.w0.7", 132, 3, 4, 0)
		if invoked {
			s.invokeRelease("c0.c0.w0.7", 132, 4)
		}
		s.acquire("c0.c0.w1.4", 133, 2, 6) // the victim: it holds until the kill
		s.killed("c0", 14, 15)
		s.hold("p.c0.w0.9", 134, 815, 830, 1)
	}
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
		{"KilledMidRelease", killedMidRelease(true), nil},
		{"KilledMidReleaseUnrecorded", killedMidRelease(false), []string{"overlap", "porcupine"}},
		{"KilledMidReleaseStillOverlapping", func(s *synth) {
			// The release was invoked only after the next holder's acquire
			// returned: the windows overlap until the invocation.
			s.acquire("c0.c0.w0.7", 132, 0, 1)
			s.acquire("c0.c0.w1.4", 133, 2, 6)
			s.invokeRelease("c0.c0.w0.7", 132, 8)
			s.killed("c0", 14, 15)
			s.hold("p.c0.w0.9", 134, 815, 830, 0)
		}, []string{"overlap", "porcupine"}},
		{"CompletedReleaseEndsAtItsCall", func(s *synth) {
			// A completed call's interval is its completion's: the window
			// ends where the Unlock was called, not where its invocation
			// was written, so the invocation loosens nothing.
			s.acquire("p.c0.w0.0", 1, 0, 1)
			call := s.invokeRelease("p.c0.w0.0", 1, 4)
			s.acquire("c0.c0.w0.0", 2, 2, 6)
			s.release("p.c0.w0.0", 1, 8, 9, outOK)
			s.completed(call)
			s.release("c0.c0.w0.0", 2, 20, 21, outOK)
		}, []string{"overlap", "porcupine"}},
		{"UnfinishedAcquireHidesNothing", func(s *synth) {
			// A killed process's acquire never returned: it opens no
			// window, and two holders that overlap still do.
			s.hold("p.c0.w0.0", 1, 0, 20, 0)
			s.invoke(opAcquire, "c0.c0.w0.0", 0, 5)
			s.ops[len(s.ops)-1].Depth = 1
			s.killed("c0", 30, 31)
			s.hold("c1.c0.w0.0", 2, 10, 40, 1)
		}, []string{"overlap", "porcupine"}},
		{"UnfinishedCallsOfAKilledProcess", func(s *synth) {
			// Killed while its acquire, write and section were out: each
			// may or may not have taken effect. The write and the SET did.
			s.acquire("c0.c0.w0.0", 1, 0, 1)
			s.invoke(opWrite, "c0.c0.w0.0", 1, 2)
			s.log = append(s.log, fencedEntry{token: 1, owner: "c0.c0.w0.0"})
			s.invoke(opSection, "c0.c0.w0.0", 1, 3)
			s.ops[len(s.ops)-1].Read = 0
			s.counter = 1
			s.invoke(opAcquire, "c0.c0.w1.0", 0, 4)
			s.ops[len(s.ops)-1].Depth = 1
			s.killed("c0", 10, 11)
			s.hold("p.c0.w0.0", 2, 820, 830, 1)
			s.counter = 2
		}, nil},
		{"UnfinishedWithoutKill", func(s *synth) {
			// Only a kill leaves a call unfinished.
			s.acquire("c0.c0.w0.0", 1, 0, 1)
			s.invokeRelease("c0.c0.w0.0", 1, 4)
			s.hold("p.c0.w0.0", 2, 10, 20, 0)
		}, []string{"unfinished: c0.c0.w0.0 release (token 1) invoked at 0.004000s never returned, and process c0 was not killed"}},
		{"UnfinishedAfterTheKill", func(s *synth) {
			s.acquire("c0.c0.w0.0", 1, 0, 1)
			s.killed("c0", 2, 3)
			s.invokeRelease("c0.c0.w0.0", 1, 4)
			s.hold("p.c0.w0.0", 2, 810, 820, 0)
		}, []string{"unfinished: c0.c0.w0.0 release (token 1) invoked at 0.004000s, after its process c0 was dead at 0.003000s"}},
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
