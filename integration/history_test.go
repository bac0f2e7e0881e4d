package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Op is one entry of a reliability run's history: something a worker did to
// the lock, the fenced store or the counter, or a fault the harness
// injected. Start and End are CLOCK_MONOTONIC nanoseconds (monoNow), which
// compare across the processes of one machine, so the histories of several
// processes merge into one.
//
// A call that may change the lock, the store or the counter (an acquire, a
// release, a fenced write, a section's SET) is recorded twice, as Jepsen
// histories are: an invocation (outcome outInvoked) written before its
// request is sent, and its completion, written once it returned, with the
// same Call number. A process killed in between leaves the invocation
// alone, and completeCalls makes it a call of unknown outcome that never
// returned. Observations (a loss seen, a read, a skipped step, an anomaly)
// change nothing and are recorded once, complete.
type Op struct {
	Kind    string `json:"kind"`
	Proc    string `json:"proc"`             // the process: "p" for the test, "c0", "c1", ... for children
	Worker  string `json:"worker,omitempty"` // the worker within Proc
	Lock    string `json:"lock,omitempty"`   // the lock a worker's op is about; none for a fault, which hits every lock
	Owner   string `json:"owner,omitempty"`  // the lock owner: one per worker iteration
	Token   int64  `json:"token,omitempty"`  // fencing token of the hold the op belongs to
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	Outcome string `json:"outcome"`
	Depth   int    `json:"depth,omitempty"` // acquire: 1 took a fresh hold, 2 re-entered one
	Final   bool   `json:"final,omitempty"` // release: meant to leave the hold's last level
	Read    int64  `json:"read,omitempty"`  // section, read: the counter value read
	Stale   bool   `json:"stale,omitempty"` // write: made on purpose after the hold was lost
	Detail  string `json:"detail,omitempty"`
	Call    int64  `json:"call,omitempty"` // pairs an invocation with its completion; unique within Proc
	// Unfinished marks, after completeCalls, a call whose process died
	// before it returned: its outcome is unknown and its End is never.
	Unfinished bool `json:"-"`
}

// Op kinds.
const (
	opAcquire = "acquire" // TryLock, or a nested TryLock that re-enters
	opRelease = "release" // Unlock
	opLost    = "lost"    // the lock context ended with ErrLockLost: Start is the acquire's start, End when the holder saw it
	opWrite   = "write"   // a fenced store write with the hold's token
	opSection = "section" // the counter's GET then SET, done under the lock
	opRead    = "read"    // a counter GET whose SET was skipped because the hold was lost
	opFreeze  = "freeze"  // harness: process Proc was stopped (SIGSTOP) from Start to End
	opKill    = "kill"    // harness: process Proc was killed (SIGKILL); by End it was dead
	opFault   = "fault"   // harness: any other injected fault, described by Detail
	opAnomaly = "anomaly" // a worker saw rlock break its contract, described by Detail
)

// Op outcomes. Failed means: acquire not acquired, release not held
// (ErrNotHeld), write rejected by the fenced store.
const (
	outOK      = "ok"
	outFailed  = "failed"
	outUnknown = "unknown" // an error left the outcome open
	outSkipped = "skipped" // not attempted: the hold was known to be lost
	outRefused = "refused" // acquire: taken and given back at once, unreplicated (rlock.ErrNotReplicated)
	outInvoked = "invoked" // an invocation record: the call is about to be sent (see Op)
)

// monoNow reads CLOCK_MONOTONIC. Go's own monotonic reading is relative to
// each process's start; this clock is the machine's, shared by all of them.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return ts.Nano()
}

// recorder appends ops to a history file as JSON lines. It is safe for
// concurrent use; the first write error is kept and returned by Close. Each
// op is written to the file at once, in one write and with no buffer in
// the process: a process killed with SIGKILL leaves a history that ends
// with its last whole op, every invocation it made before it sent a
// request among them.
type recorder struct {
	mu    sync.Mutex
	f     *os.File
	enc   *json.Encoder
	err   error
	calls int64 // the last call number given out
}

func createRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &recorder{f: f, enc: json.NewEncoder(f)}, nil
}

func (r *recorder) add(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.enc.Encode(op)
	}
}

// invoke records that the call op is about to be sent: it writes op's
// invocation, numbered as a new call, and returns op with that number, for
// the caller to complete (End, Outcome, ...) and add once the call
// returned. If op has a Start, the call began earlier (a section's GET,
// whose SET is the call's effect) and both records keep it; if not, the
// invocation's Start is now and the returned op's Start is taken again
// after the invocation is written, right before the request goes out, so
// that a completed call's interval is as tight as without the invocation.
func (r *recorder) invoke(op Op) Op {
	fresh := op.Start == 0
	if fresh {
		op.Start = monoNow()
	}
	r.mu.Lock()
	r.calls++
	op.Call = r.calls
	inv := op
	inv.End, inv.Outcome = 0, outInvoked
	if r.err == nil {
		r.err = r.enc.Encode(inv)
	}
	r.mu.Unlock()
	if fresh {
		op.Start = monoNow()
	}
	return op
}

// Close closes the history's file.
func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.err, r.f.Close())
}

// readHistory merges the histories in paths, each call's invocation paired
// with its completion (completeCalls). A history may end with part of an
// op, which it then leaves out: the write of a process killed while it
// wrote an op that straddles a page of the file ends at the page
// (Linux checks for a fatal signal between pages). The op lost so is an
// invocation whose request was never sent, since the process was still
// writing it, or a completion, whose call completeCalls then counts as
// one that never returned, its outcome unknown; either way the history
// claims nothing that did not happen.
func readHistory(paths ...string) ([]Op, error) {
	var ops []Op
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		// Every whole op ends with a newline (json.Encoder's).
		data = data[:bytes.LastIndexByte(data, '\n')+1]
		dec := json.NewDecoder(bytes.NewReader(data))
		for dec.More() {
			var op Op
			if err := dec.Decode(&op); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			ops = append(ops, op)
		}
	}
	return completeCalls(ops), nil
}

// callKey names a call: its number is unique within its process.
type callKey struct {
	proc string
	call int64
}

// completeCalls pairs each invocation in ops with its call's completion.
// A completed call keeps its completion alone. An invocation left without
// one, by a process that died while its request was out, becomes that
// call with an unknown outcome that never returned (End never, Unfinished
// set): the request may have taken effect at any moment from the
// invocation's Start on, and the checks treat it as any call of unknown
// outcome: a final release ends its hold's window at its Start, an acquire
// grants no window (a window needs an acquire that returned), a write or
// a section may or may not have been applied. checkUnfinished says where
// an unfinished call may be. ops already paired are returned as they are.
func completeCalls(ops []Op) []Op {
	completed := map[callKey]bool{}
	for _, op := range ops {
		if op.Call != 0 && op.Outcome != outInvoked {
			completed[callKey{op.Proc, op.Call}] = true
		}
	}
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		if op.Outcome == outInvoked {
			if completed[callKey{op.Proc, op.Call}] {
				continue
			}
			op.Outcome, op.End, op.Unfinished = outUnknown, math.MaxInt64, true
			op.Detail = "invoked, never returned"
		}
		out = append(out, op)
	}
	return out
}

// checkUnfinished returns a violation for each unfinished call (see
// completeCalls) that no kill explains: only a process the harness killed
// may leave a call unfinished, and only one it invoked before it died. Any
// other process, a frozen one once thawed included, returns from every
// call before the run ends and records its completion. kills tells when
// each killed process was dead; a frozen process killed while frozen is a
// killed process.
func checkUnfinished(ops []Op, kills map[string]int64) []string {
	var out []string
	for _, op := range ops {
		if !op.Unfinished {
			continue
		}
		dead, killed := kills[op.Proc]
		switch {
		case !killed:
			out = append(out, fmt.Sprintf("unfinished: %s %s (token %d) invoked at %s never returned, and process %s was not killed",
				op.Owner, op.Kind, op.Token, stamp(op.Start), op.Proc))
		case op.Start >= dead:
			out = append(out, fmt.Sprintf("unfinished: %s %s (token %d) invoked at %s, after its process %s was dead at %s",
				op.Owner, op.Kind, op.Token, stamp(op.Start), op.Proc, stamp(dead)))
		}
	}
	return out
}

// killTimes maps each process the harness killed to when it was dead.
func killTimes(ops []Op) map[string]int64 {
	kills := map[string]int64{}
	for _, op := range ops {
		if op.Kind == opKill {
			kills[op.Proc] = op.End
		}
	}
	return kills
}
