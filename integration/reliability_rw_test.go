package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
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

// TestReliabilityRWRedisPaused: readers and writers of three Clients loop
// on one RWMutex, with re-entries, fixed leases and confused unlocks, the
// Mutex workers' iterations, while the lock's Redis is paused for longer
// than the lease. Writers write to the fenced store and count; readers
// read the counter twice a moment apart, and must see it unchanged. The
// history must show readers overlapping only readers, writers nobody,
// increasing write tokens, read tokens that are the latest write's, a
// fenced store that accepted writes in token order, and no lost update.
func TestReliabilityRWRedisPaused(t *testing.T) {
	const (
		lease = time.Second
		run   = 4 * time.Second
		pause = lease * 3 / 2
	)
	lockNode := faultNode(t)
	name := redistest.LockName(t)
	store := fencedStore{redistest.New(t, redistest.Config{Backend: lockNode.Backend()}).Client(t), name}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	rec, err := createRecorder(path)
	require.NoError(t, err)
	cfg := procConfig{Proc: "p", Locks: []string{name}, MaxIterations: 1 << 20, Run: run,
		Lease: lease, Retry: 300 * time.Millisecond, Wait: 200 * time.Millisecond}

	var workers []*worker
	for c := range 3 {
		rc := lockNode.Client(t)
		cl, err := rlock.New(rc, rlock.WithLeaseTime(cfg.Lease), rlock.WithRetryTimeout(cfg.Retry))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, cl.Close()) })
		rw := cl.RWMutex(name)
		workers = append(workers, &worker{id: fmt.Sprintf("p.c%d.%s0", c, writerTag), cfg: cfg, lock: name, mu: rw, store: store, b: rc.B(), rec: rec})
		for r := range 2 {
			workers = append(workers, &worker{id: fmt.Sprintf("p.c%d.%s%d", c, readerTag, r), cfg: cfg,
				lock: name, mu: readLocker{rw}, read: true, store: store, rec: rec})
		}
	}
	deadline := time.Now().Add(cfg.Run)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(t.Context(), deadline) })
	}
	time.Sleep(run / 4) // the workload runs a quarter of its time before the fault
	awaitRWHolder(t, lockNode.Client(t), rwKeys(name).Hash)
	fault := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: "lock node paused"}
	require.NoError(t, lockNode.Pause(t.Context()))
	time.Sleep(pause) // the fault: the lock node stays paused this long
	require.NoError(t, lockNode.Resume(t.Context()))
	fault.End = monoNow()
	rec.add(fault)
	wg.Wait()
	require.NoError(t, rec.Close())

	ops, err := readHistory(path)
	require.NoError(t, err)
	state, err := store.state(t.Context())
	require.NoError(t, err)
	v := checkRWHistory(ops, state)
	t.Logf("summary: ops=%d holds=%d reads=%d sections=%d lost=%d stale_rejected=%d",
		v.ops, v.holds, v.reads, v.sections, v.lost, v.staleRejected)
	for _, violation := range v.violations {
		t.Error(violation)
	}
	assert.Positive(t, v.reads, "readers read")
	assert.Positive(t, v.sections, "writers counted")
	assert.Positive(t, v.lost, "the pause cost holders their holds")
}

// awaitRWHolder waits until the read-write lock whose hash is hash has a
// holder, so that the fault that follows hits a hold: a pause between
// holds would cost nobody theirs.
func awaitRWHolder(t *testing.T, rc rueidis.Client, hash string) {
	t.Helper()
	redistest.Eventually(t, "a holder of "+hash, func(ctx context.Context) error {
		fields, err := rc.Do(ctx, rc.B().Hkeys().Key(hash).Build()).AsStrSlice()
		if err != nil {
			return err
		}
		for _, f := range fields {
			if strings.HasSuffix(f, ":r") || strings.HasSuffix(f, ":w") {
				return nil
			}
		}
		return fmt.Errorf("no holder among %v", fields)
	})
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
