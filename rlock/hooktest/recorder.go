// Package hooktest is test support, not part of rlock's API: a Recorder
// that keeps what rlock's hooks report, for the tests of rlock, rlockotel
// and integration: every event in order, and whether they balance (every
// call that started ended once, with the context its start returned; every
// hold that began ended once).
//
// It sits under rlock/, not internal/, because it depends on rlock: the
// packages under internal/ are leaves that rlock imports, never the other
// way round. It imports testify, so a program must not import it.
package hooktest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Recorder is an rlock.Hooks that keeps every event. Its zero value is
// ready; it is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	ev    Events
	open  map[context.Context]string // started calls, by the context their start returned
	holds map[int64]int              // tokens of holds begun and not ended
}

var _ rlock.Hooks = (*Recorder)(nil)

// Events is what a Recorder saw.
type Events struct {
	Calls    []string // hook methods, in call order
	Waits    int
	Acquires []rlock.AcquireEnd
	Releases []rlock.ReleaseEnd
	Starts   []rlock.HoldStart
	Ends     []rlock.HoldEnd
	Rounds   []rlock.RenewalRound
	Acks     []rlock.ReplicaAck
	Problems []string // ends given no context of their start, holds that ended without beginning
	Open     int      // calls started and not ended
	Held     int      // holds begun and not ended
}

type startKey struct{}

// begin records the start of a traced call and returns the context its
// other hooks must be given.
func (r *Recorder) begin(call string, ctx context.Context) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Calls = append(r.ev.Calls, call)
	ctx = context.WithValue(ctx, startKey{}, new(int)) // a context of its own, even for equal parents
	if r.open == nil {
		r.open = map[context.Context]string{}
	}
	r.open[ctx] = call
	r.ev.Open++
	return ctx
}

// next records call, a hook of the call that start began with ctx; ends
// says it is the last. The caller holds r.mu.
func (r *Recorder) next(call, start string, ctx context.Context, ends bool) {
	r.ev.Calls = append(r.ev.Calls, call)
	if r.open[ctx] != start {
		r.ev.Problems = append(r.ev.Problems, call+" not given the context of its "+start)
		return
	}
	if ends {
		delete(r.open, ctx)
		r.ev.Open--
	}
}

func (r *Recorder) AcquireStart(ctx context.Context, _ rlock.LockRef) context.Context {
	return r.begin("AcquireStart", ctx)
}

func (r *Recorder) AcquireWait(ctx context.Context, _ rlock.LockRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next("AcquireWait", "AcquireStart", ctx, false)
	r.ev.Waits++
}

func (r *Recorder) AcquireEnd(ctx context.Context, e rlock.AcquireEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next("AcquireEnd", "AcquireStart", ctx, true)
	r.ev.Acquires = append(r.ev.Acquires, e)
}

func (r *Recorder) ReleaseStart(ctx context.Context, _ rlock.LockRef) context.Context {
	return r.begin("ReleaseStart", ctx)
}

func (r *Recorder) ReleaseEnd(ctx context.Context, e rlock.ReleaseEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next("ReleaseEnd", "ReleaseStart", ctx, true)
	r.ev.Releases = append(r.ev.Releases, e)
}

func (r *Recorder) HoldStart(e rlock.HoldStart) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Calls = append(r.ev.Calls, "HoldStart")
	r.ev.Starts = append(r.ev.Starts, e)
	if r.holds == nil {
		r.holds = map[int64]int{}
	}
	r.holds[e.Token]++
	r.ev.Held++
}

func (r *Recorder) HoldEnd(e rlock.HoldEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Calls = append(r.ev.Calls, "HoldEnd")
	r.ev.Ends = append(r.ev.Ends, e)
	if r.holds[e.Token] == 0 {
		r.ev.Problems = append(r.ev.Problems, "a hold ended that never began")
		return
	}
	r.holds[e.Token]--
	r.ev.Held--
}

// RenewalRound is kept out of Calls: rounds come at the watchdog's pace.
func (r *Recorder) RenewalRound(e rlock.RenewalRound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Rounds = append(r.ev.Rounds, e)
}

func (r *Recorder) ReplicaAck(_ context.Context, e rlock.ReplicaAck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev.Calls = append(r.ev.Calls, "ReplicaAck")
	r.ev.Acks = append(r.ev.Acks, e)
}

// Snapshot returns a copy of what r saw so far.
func (r *Recorder) Snapshot() Events {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.ev
	e.Calls = append([]string(nil), e.Calls...)
	e.Acquires = append([]rlock.AcquireEnd(nil), e.Acquires...)
	e.Releases = append([]rlock.ReleaseEnd(nil), e.Releases...)
	e.Starts = append([]rlock.HoldStart(nil), e.Starts...)
	e.Ends = append([]rlock.HoldEnd(nil), e.Ends...)
	e.Rounds = append([]rlock.RenewalRound(nil), e.Rounds...)
	e.Acks = append([]rlock.ReplicaAck(nil), e.Acks...)
	e.Problems = append([]string(nil), e.Problems...)
	return e
}

// WaitFor waits until cond holds on a snapshot, and returns it; it fails t
// after redistest.Patience. cond runs on the caller's goroutine, t's.
func (r *Recorder) WaitFor(t testing.TB, what string, cond func(Events) bool) Events {
	t.Helper()
	var snap Events
	redistest.Eventually(t, what, func(context.Context) error {
		if snap = r.Snapshot(); !cond(snap) {
			return fmt.Errorf("not yet, after %d events", len(snap.Calls))
		}
		return nil
	})
	return snap
}

// Balanced checks that every call that started ended once, every hold that
// began ended once, and AcquireWait came once for each acquire that
// waited; it returns the snapshot it checked.
func (r *Recorder) Balanced(t testing.TB) Events {
	t.Helper()
	e := r.Snapshot()
	assert.Empty(t, e.Problems)
	assert.Zero(t, e.Open, "calls started and never ended")
	assert.Zero(t, e.Held, "holds begun and never ended")
	waited := 0
	for _, a := range e.Acquires {
		if a.Waited {
			waited++
		}
	}
	assert.Equal(t, e.Waits, waited, "AcquireWait once for each acquire that waited")
	return e
}
