package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlock/rlock/rlock"
)

// holdLocker is what a reliability worker locks: a Mutex, a FairMutex, an
// RWMutex's write lock, or its read lock (readLocker).
type holdLocker interface {
	TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error)
	Unlock(ctx context.Context) error
	FencingToken(ctx context.Context) (int64, bool)
}

var (
	_ holdLocker = (*rlock.Mutex)(nil)
	_ holdLocker = (*rlock.FairMutex)(nil)
	_ holdLocker = (*rlock.RWMutex)(nil)
	_ holdLocker = readLocker{}
)

// readLocker is an RWMutex's read lock as a holdLocker.
type readLocker struct{ rw *rlock.RWMutex }

func (r readLocker) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	return r.rw.TryRLock(ctx, wait, lease)
}
func (r readLocker) Unlock(ctx context.Context) error               { return r.rw.RUnlock(ctx) }
func (r readLocker) FencingToken(ctx context.Context) (int64, bool) { return r.rw.FencingToken(ctx) }

// Reader and writer workers' ids, from which the checks tell their holds
// apart (an owner is "<worker id>.<iteration>").
const (
	readerTag = "r"
	writerTag = "w"
)

// The Mutex scenarios that end a hold from outside its process, on an
// RWMutex: each Client runs a writer (the victim is one) and a reader.
func TestReliabilityRWHolderStopped(t *testing.T) {
	runScenario(t, scenario{name: "rw-holder-stopped", victim: victimChild, fault: (*run).stopHolder, rw: true})
}

func TestReliabilityRWRedisRestarted(t *testing.T) {
	runScenario(t, scenario{name: "rw-redis-restarted", victim: victimLocal, fault: (*run).restartRedis, rw: true})
}

func TestReliabilityRWLinkCut(t *testing.T) {
	runScenario(t, scenario{name: "rw-link-cut", proxy: true, lease: 2 * time.Second, victim: victimLocal, fault: (*run).cutLink, rw: true})
}

// TestReliabilityRWRedisPaused pauses the lock's Redis for longer than the
// lease while the victim, a writer, holds the RWMutex: it must lose its
// hold by its local deadline, and the readers and writers of the three
// processes, with re-entries, fixed leases and confused unlocks, must keep
// the reader-writer model throughout. The pause is injected through the
// victim, so it always hits a live hold (pausing when a poll saw a holder
// sometimes fell between holds, and cost nobody theirs).
func TestReliabilityRWRedisPaused(t *testing.T) {
	v, _ := runScenario(t, scenario{name: "rw-redis-paused", victim: victimLocal, fault: (*run).pauseRedis, rw: true,
		after: checkReadersRead})
	assert.Positive(t, v.lost, "the pause cost the victim its hold")
}

// checkReadersRead fails a reader-writer run in which no reader completed
// a read: the run then checked writers alone.
func checkReadersRead(_ *run, t *testing.T, ops []Op) {
	reads := 0
	for _, op := range ops {
		if op.Kind == opRead && op.Outcome == outOK {
			reads++
		}
	}
	assert.Positive(t, reads, "readers read")
}

// look is a reader's critical section: it reads the counter twice, a
// moment apart. No writer may change it in between; a change seen while
// the hold's context is still live is an anomaly.
func (w *worker) look(ctx context.Context, h *tracked) {
	op := w.op(opRead, h.owner, h.token)
	op.Start = monoNow()
	if h.ctx.Err() != nil {
		op.End, op.Outcome = op.Start, outSkipped
		w.rec.add(op)
		return
	}
	first, err := w.store.counter(ctx)
	if err == nil {
		w.sleep(ctx, holdFor)
		var second int64
		second, err = w.store.counter(ctx)
		if err == nil && second != first && h.ctx.Err() == nil {
			op.Kind, op.Detail = opAnomaly, fmt.Sprintf("the counter moved from %d to %d under a read hold", first, second)
		}
	}
	op.End, op.Read, op.Outcome = monoNow(), first, outOK
	if err != nil {
		op.Outcome, op.Detail = outUnknown, err.Error()
	}
	w.rec.add(op)
}
