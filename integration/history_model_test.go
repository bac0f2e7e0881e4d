package integration

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// lockState is the sequential specification's state: a reentrant mutex (who
// holds it and how many levels), the fencing counter's last token, and the
// counter the holders increment.
type lockState struct {
	holder  string
	count   int
	orphan  bool // the hold may have ended without a release: any other owner may take over
	token   int64
	counter int64
}

func (s lockState) held() bool               { return s.count > 0 }
func (s lockState) heldBy(owner string) bool { return s.count > 0 && s.holder == owner }

// freed is s with the lock free.
func (s lockState) freed() lockState {
	return lockState{token: s.token, counter: s.counter}
}

// modelInput is one operation's call; its output is the op's outcome.
type modelInput struct {
	kind, owner string
	token, read int64
}

// lockModel is a reentrant mutex as porcupine checks it. An operation whose
// outcome is unknown is open-ended (returns at infinity) and may or may not
// have taken effect. A loss may or may not have freed the lock in Redis
// (the holder's local deadline passes first); either way the lock may then
// expire at any moment, which the orphan flag says.
var lockModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{lockState{}} },
	Step: func(state, input, output any) []any {
		var out []any
		for _, s := range step(state.(lockState), input.(modelInput), output.(string)) {
			out = append(out, s)
		}
		return out
	},
	DescribeOperation: func(input, output any) string {
		in := input.(modelInput)
		return fmt.Sprintf("%s(%s, token %d, read %d) -> %s", in.kind, in.owner, in.token, in.read, output)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(lockState)) },
}).ToModel()

// step returns the states s may move to when in returns out; none when it
// cannot.
func step(s lockState, in modelInput, out string) []lockState {
	mine := s.heldBy(in.owner)
	switch in.kind {
	case opAcquire:
		takeable := !s.held() || (s.orphan && !mine)
		switch {
		case out == outOK && mine && in.token == s.token:
			s.count++
			return []lockState{s}
		case out == outOK && takeable && (in.token > s.token || in.token == 0):
			// Token 0: the hold was lost before its token could be read.
			return []lockState{{holder: in.owner, count: 1, token: max(in.token, s.token), counter: s.counter}}
		case out == outFailed && s.held() && !mine:
			return []lockState{s}
		case out == outUnknown && mine:
			more := s
			more.count++
			more.orphan = true
			return []lockState{s, more}
		case out == outUnknown && takeable:
			return []lockState{s, {holder: in.owner, count: 1, orphan: true, token: s.token, counter: s.counter}}
		case out == outUnknown:
			return []lockState{s}
		}
	case opRelease:
		switch {
		case out == outOK && mine:
			return []lockState{leave(s)}
		case out == outFailed && !mine:
			return []lockState{s}
		case out == outFailed && s.orphan:
			return []lockState{s.freed()}
		case out == outUnknown && mine:
			kept := s
			kept.orphan = true
			return []lockState{leave(s), kept}
		case out == outUnknown:
			return []lockState{s}
		}
	case opKill:
		// A killed process's hold is never released: Redis expires it.
		if !s.held() || !strings.HasPrefix(s.holder, in.owner+".") {
			return []lockState{s}
		}
		s.orphan = true
		return []lockState{s}
	case opLost:
		if !mine {
			return []lockState{s}
		}
		kept := s
		kept.orphan = true
		return []lockState{s.freed(), kept}
	case opSection:
		switch {
		case out == outOK && mine && s.counter == in.read:
			s.counter++
			return []lockState{s}
		case out == outUnknown && mine && s.counter == in.read:
			done := s
			done.counter++
			return []lockState{s, done}
		case out == outUnknown:
			return []lockState{s}
		}
	case opRead:
		if s.counter == in.read {
			return []lockState{s}
		}
	}
	return nil
}

// leave is s after its holder left one level.
func leave(s lockState) lockState {
	s.count--
	if s.count == 0 {
		return s.freed()
	}
	return s
}

// linearizeTimeout bounds porcupine's search unless a scenario bounds it
// otherwise; histories of a brief run take well under a second.
const linearizeTimeout = 2 * time.Minute

// porcupineTimeout is the kind of violation that says porcupine gave no
// verdict in its time.
const porcupineTimeout = "porcupine timeout"

// faultyLinearize bounds porcupine on a history with many calls of unknown
// outcome (acquires sent to a dying master, a minute of random faults):
// porcupine must try each at every later point, and it may find no verdict
// in time. The scenarios that give it this bound tolerate porcupineTimeout;
// the other four checks do not depend on it.
const faultyLinearize = 20 * time.Second

// checkLinearizable is check 5: porcupine finds an order of the lock and
// counter operations, each placed within its real-time interval, that the
// reentrant-mutex model accepts.
func checkLinearizable(ops []Op, within time.Duration, v *verdict) {
	switch porcupine.CheckOperationsTimeout(lockModel, modelHistory(ops), within) {
	case porcupine.Illegal:
		v.violate("porcupine: the history is not linearizable against the reentrant-mutex model")
	case porcupine.Unknown:
		v.violate("%s: no verdict within %v", porcupineTimeout, within)
	}
}

// modelHistory turns a history into porcupine operations. Fenced writes are
// checked on their own (checkFencedWrites); skipped and refused operations
// did nothing.
func modelHistory(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		switch op.Kind {
		case opAcquire, opRelease, opLost, opSection, opRead:
		case opKill:
			op.Owner = op.Proc // every owner of the process is named "<proc>.…"
		default:
			continue
		}
		if op.Outcome == outSkipped || op.Outcome == outRefused {
			continue // no effect on the lock
		}
		ret := op.End
		if op.Outcome == outUnknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{
			Input:  modelInput{kind: op.Kind, owner: op.Owner, token: op.Token, read: op.Read},
			Call:   op.Start,
			Output: op.Outcome,
			Return: ret,
		})
	}
	return out
}
