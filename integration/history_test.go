package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Op is one entry of a reliability run's history: something a worker did to
// the lock, the fenced store or the counter, or a fault the harness
// injected. Start and End are CLOCK_MONOTONIC nanoseconds (monoNow), which
// compare across the processes of one machine, so the histories of several
// processes merge into one.
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
// op is written to the file at once, in one write: a process killed with
// SIGKILL leaves a history that ends with its last whole op.
type recorder struct {
	mu  sync.Mutex
	f   *os.File
	enc *json.Encoder
	err error
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

// Close closes the history's file.
func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.err, r.f.Close())
}

// readHistory merges the histories in paths.
func readHistory(paths ...string) ([]Op, error) {
	var ops []Op
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bufio.NewReader(f))
		for dec.More() {
			var op Op
			if err := dec.Decode(&op); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			ops = append(ops, op)
		}
		f.Close()
	}
	return ops, nil
}
