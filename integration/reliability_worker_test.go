package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// procConfig is what one process of a reliability run is told: where the
// lock and the store are, how many workers to run and for how long. The
// test hands it to its child processes as JSON in workerEnv.
type procConfig struct {
	Proc          string        `json:"proc"`
	Clients       []string      `json:"clients"` // the lock node's address for each rlock Client: direct, or a proxy's
	Store         string        `json:"store"`
	Locks         []string      `json:"locks"`         // the workers of each Client take these in turn
	Workers       int           `json:"workers"`       // per Client
	MaxIterations int           `json:"maxIterations"` // per worker
	Run           time.Duration `json:"run"`           // workers start no iteration after this
	Lease         time.Duration `json:"lease"`
	Retry         time.Duration `json:"retry"`
	Wait          time.Duration `json:"wait"` // TryLock's wait
	Out           string        `json:"out"`  // history file
	Victim        bool          `json:"victim"`
	Fair          bool          `json:"fair,omitempty"`       // workers take a FairMutex
	RW            bool          `json:"rw,omitempty"`         // workers take an RWMutex: the first of each Client writes, the others read
	Mode          string        `json:"mode,omitempty"`       // how Clients reach the lock (lockClientOption)
	ReplicaAck    int           `json:"replicaAck,omitempty"` // rlock.WithReplicaAck(ReplicaAck, Lease/2)
	Netns         string        `json:"netns,omitempty"`      // the network namespace a child runs in
	FixedVictim   bool          `json:"fixedVictim,omitempty"`
	Starve        int           `json:"starve,omitempty"` // spinning goroutines on one P while starved (starveOnSignal)
}

const (
	holdFor        = 2 * time.Millisecond  // a holder keeps the lock this long between its write and its count
	iterationPause = 3 * time.Millisecond  // at most, between a worker's iterations
	errorBackoff   = 50 * time.Millisecond // after an acquire failed with an error
)

// runProcess runs one process's workers until they are done, recording into
// rec. ctl, if not nil, makes the first worker the victim.
func runProcess(ctx context.Context, cfg procConfig, rec *recorder, ctl holdControl) error {
	src, err := redistest.Dial(ctx, redistest.ClientOption(cfg.Store))
	if err != nil {
		return fmt.Errorf("store client: %w", err)
	}
	defer src.Close()

	var clients []*rlock.Client
	closeAll := func() error {
		var errs []error
		for _, c := range clients {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	var workers []*worker
	opts := []rlock.Option{rlock.WithLeaseTime(cfg.Lease), rlock.WithRetryTimeout(cfg.Retry)}
	if cfg.ReplicaAck > 0 {
		opts = append(opts, rlock.WithReplicaAck(cfg.ReplicaAck, cfg.Lease/2))
	}
	for i, entry := range cfg.Clients {
		// One rlock Client for the entry; in modeRedLock, one per master.
		var set []*rlock.Client
		var builder rueidis.Builder // the commands of guarded writes, built for the lock's node
		for _, addr := range masters(cfg.Mode, entry) {
			rc, err := redistest.Dial(ctx, lockClientOption(cfg.Mode, addr))
			if err != nil {
				return errors.Join(fmt.Errorf("lock client %d: %w", i, err), closeAll())
			}
			defer rc.Close()
			c, err := rlock.New(rc, opts...)
			if err != nil {
				return errors.Join(fmt.Errorf("rlock client %d: %w", i, err), closeAll())
			}
			clients = append(clients, c)
			set = append(set, c)
			builder = rc.B()
		}
		for j := range cfg.Workers {
			lock := cfg.Locks[j%len(cfg.Locks)]
			mu, read := lockOf(set, cfg, lock, j)
			tag := writerTag
			if read {
				tag = readerTag
			}
			w := &worker{id: fmt.Sprintf("%s.c%d.%s%d", cfg.Proc, i, tag, j), cfg: cfg, lock: lock,
				mu: mu, read: read, store: fencedStore{src, lock}, b: builder, rec: rec}
			if i == 0 && j == 0 {
				w.ctl = ctl
			}
			workers = append(workers, w)
		}
	}
	deadline := time.Now().Add(cfg.Run)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx, deadline) })
	}
	wg.Wait()
	return closeAll()
}

// worker loops: acquire, write to the fenced store, count under the lock,
// release. Every third hold re-enters the lock once; every fourth takes a
// fixed lease instead of the watchdog's (the victim's hold takes what
// FixedVictim says); every fifth iteration begins by
// unlocking the previous hold's context again, as a confused caller would,
// which must leave the current holder alone.
type worker struct {
	id    string
	cfg   procConfig
	lock  string
	mu    holdLocker
	read  bool // a reader of a read-write lock: its section only looks (see look)
	store fencedStore
	b     rueidis.Builder // builds the guarded writes' commands
	rec   *recorder
	ctl   holdControl // the victim protocol, for the victim worker
	armed bool        // the next hold that may be the victim's (victimMay) is the one the test's fault will hit
	prev  *tracked    // the last hold, released
	timer *time.Timer
}

// run iterates until deadline, MaxIterations or the end of ctx.
func (w *worker) run(ctx context.Context, deadline time.Time) {
	w.timer = time.NewTimer(time.Hour)
	defer w.timer.Stop()
	for i := 0; i < w.cfg.MaxIterations && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		w.armed = w.armed || (w.ctl != nil && w.ctl.armed())
		w.iteration(ctx, i)
		w.sleep(ctx, rand.N(iterationPause))
	}
}

// iteration is one hold, owned by a fresh owner.
func (w *worker) iteration(ctx context.Context, i int) {
	owner := fmt.Sprintf("%s.%d", w.id, i)
	if i%5 == 4 && w.prev != nil {
		w.release(w.prev, false)
	}
	var lease time.Duration // the watchdog's
	if (w.armed && w.cfg.FixedVictim) || (!w.armed && i%4 == 3) {
		lease = w.cfg.Lease
	}
	op := w.op(opAcquire, owner, 0)
	op.Depth = 1
	op = w.rec.invoke(op)
	lctx, ok, err := w.mu.TryLock(ctx, w.cfg.Wait, lease)
	op.End = monoNow()
	if err != nil || !ok {
		op.Outcome = outFailed
		switch {
		case errors.Is(err, rlock.ErrNotReplicated):
			op.Outcome = outRefused
		case err != nil:
			op.Outcome, op.Detail = outUnknown, err.Error()
		}
		w.rec.add(op)
		if err != nil {
			w.sleep(ctx, errorBackoff)
		}
		return
	}
	h := w.track(lctx, op)
	w.prev = h

	if w.armed && victimMay(w.mu, lctx) {
		// The test injects its fault now; once told to go on, the worker
		// writes even though its lock is lost, and the store must refuse.
		w.armed = false
		w.ctl.holdAndWait(ctx, h.token)
		w.work(ctx, h, true)
		w.release(h, true)
		return
	}
	depth := 1
	if i%3 == 0 {
		depth = w.reenter(ctx, h)
	}
	if w.read {
		w.look(ctx, h)
	} else {
		w.work(ctx, h, false)
	}
	if depth == 2 {
		w.release(h, false)
	}
	w.release(h, true)
}

// reenter takes the lock again with the hold's own context and returns the
// hold's depth: 2 if it re-entered.
func (w *worker) reenter(ctx context.Context, h *tracked) int {
	if h.ctx.Err() != nil {
		return 1
	}
	op := w.op(opAcquire, h.owner, h.token)
	op.Depth = 2
	op = w.rec.invoke(op)
	nctx, ok, err := w.mu.TryLock(h.ctx, 0, 0)
	op.End = monoNow()
	switch {
	case err != nil:
		op.Outcome, op.Detail = outUnknown, err.Error()
	case !ok:
		op.Outcome = outFailed // another owner holds it: this hold was lost
	case nctx != h.ctx:
		// The hold ended just before, and this owner took a fresh one:
		// give it back at once. The call's completion is the fresh hold's
		// acquire.
		fresh := w.track(nctx, op)
		w.release(fresh, true)
		return 1
	default:
		op.Outcome = outOK
		w.rec.add(op)
		return 2
	}
	w.rec.add(op)
	return 1
}

// work is the critical section: one fenced write, a moment's hold, then the
// counter's read-then-write. Nothing is done once the lock context is done,
// except, when stale is set, the fenced write, to show the store refuses it.
func (w *worker) work(ctx context.Context, h *tracked, stale bool) {
	// A RedLock has no fencing token to write with: its holders only count.
	if w.cfg.Mode == modeRedLock || w.write(ctx, h, stale) {
		w.guard(h, stale)
		w.sleep(ctx, holdFor)
		w.count(ctx, h)
	}
}

// write makes the section's fenced write, and reports false when it
// skipped it because the hold had ended (and stale was not set).
func (w *worker) write(ctx context.Context, h *tracked, stale bool) bool {
	op := w.op(opWrite, h.owner, h.token)
	if h.ctx.Err() != nil && !stale {
		op.Start = monoNow()
		op.End, op.Outcome = op.Start, outSkipped
		w.rec.add(op)
		return false
	}
	op.Stale = h.ctx.Err() != nil
	op = w.rec.invoke(op)
	accepted, err := w.store.write(ctx, h.token, h.owner)
	op.End = monoNow()
	switch {
	case err != nil:
		op.Outcome, op.Detail = outUnknown, err.Error()
	case accepted:
		op.Outcome = outOK
	default:
		op.Outcome = outFailed
	}
	w.rec.add(op)
	return true
}

// guard makes the section's guarded write (guardedWrite) on the lock's
// own node, when the lock has Do: nothing is sent once the lock context is
// done, except, when stale is set, a Do with it, which must run nothing.
func (w *worker) guard(h *tracked, stale bool) {
	g, ok := w.mu.(guardedLocker)
	if !ok {
		return
	}
	op := w.op(opGuarded, h.owner, h.token)
	if h.ctx.Err() != nil && !stale {
		op.Start = monoNow()
		op.End, op.Outcome = op.Start, outSkipped
		w.rec.add(op)
		return
	}
	op.Stale = h.ctx.Err() != nil
	op = w.rec.invoke(op)
	prev, failed, err := guardedWrite(h.ctx, g, w.b, h.token, h.owner)
	op.End, op.Read, op.Outcome = monoNow(), prev, outOK
	switch {
	case failed:
		op.Outcome, op.Detail = outFailed, err.Error()
	case err != nil:
		op.Outcome, op.Detail = outUnknown, err.Error()
	}
	w.rec.add(op)
}

// count adds one to the counter by reading it and writing it back, which
// loses an update unless the lock excludes every other holder. The SET is
// the section's call, invoked once the GET has returned; the section's
// interval begins with the GET.
func (w *worker) count(ctx context.Context, h *tracked) {
	op := w.op(opSection, h.owner, h.token)
	op.Start = monoNow()
	if h.ctx.Err() != nil {
		op.End, op.Outcome = op.Start, outSkipped
		w.rec.add(op)
		return
	}
	n, err := w.store.counter(ctx)
	if err != nil {
		op.End, op.Outcome, op.Detail = monoNow(), outSkipped, err.Error()
		w.rec.add(op)
		return
	}
	op.Read = n
	if h.ctx.Err() != nil {
		op.Kind, op.End, op.Outcome = opRead, monoNow(), outOK
		w.rec.add(op)
		return
	}
	op = w.rec.invoke(op)
	err = w.store.setCounter(ctx, n+1)
	op.End, op.Outcome = monoNow(), outOK
	if err != nil {
		op.Outcome, op.Detail = outUnknown, err.Error()
	}
	w.rec.add(op)
}

// release leaves one level of h; final is the worker's last one, after
// which it records whether and when it saw h lost.
func (w *worker) release(h *tracked, final bool) {
	op := w.op(opRelease, h.owner, h.token)
	op.Final = final
	op = w.rec.invoke(op)
	err := w.mu.Unlock(h.ctx)
	op.End = monoNow()
	switch {
	case err == nil:
		op.Outcome = outOK
	case errors.Is(err, rlock.ErrNotHeld):
		op.Outcome = outFailed
	default:
		op.Outcome, op.Detail = outUnknown, err.Error()
	}
	w.rec.add(op)
	if final {
		w.settle(h)
	}
}

func (w *worker) op(kind, owner string, token int64) Op {
	return Op{Kind: kind, Proc: w.cfg.Proc, Worker: w.id, Lock: w.lock, Owner: owner, Token: token}
}

// sleep waits d, or until ctx is done.
func (w *worker) sleep(ctx context.Context, d time.Duration) {
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
	case <-ctx.Done():
		w.timer.Stop()
	}
}

// tracked is one hold as its worker follows it: its token, read as soon as
// the acquire returned, and when its lock context ended with ErrLockLost.
type tracked struct {
	ctx          context.Context
	owner        string
	token        int64
	acquireStart int64
	lostAt       atomic.Int64 // when the holder saw ErrLockLost; 0 if it did not
	stop         func() bool
	done         chan struct{} // closed once the lock context is done and lostAt is set
}

// track follows the hold that lctx carries and records the completion of
// acq, the call that acquired it (its Start and End set).
func (w *worker) track(lctx context.Context, acq Op) *tracked {
	h := &tracked{ctx: lctx, owner: acq.Owner, acquireStart: acq.Start, done: make(chan struct{})}
	token, ok := w.mu.FencingToken(lctx)
	h.token = token
	if errors.Is(context.Cause(lctx), rlock.ErrLockLost) {
		h.lostAt.Store(acq.End) // lost before the acquire returned: its window is empty
	}
	h.stop = context.AfterFunc(lctx, func() {
		defer close(h.done)
		if errors.Is(context.Cause(lctx), rlock.ErrLockLost) {
			h.lostAt.CompareAndSwap(0, monoNow())
		}
	})
	acq.Token, acq.Depth, acq.Outcome = token, 1, outOK
	if !ok {
		acq.Detail = "lost before its token could be read"
	}
	w.rec.add(acq)
	return h
}

// settle waits, after the final Unlock, until the hold's lock context has
// ended (as it must by then) and records its loss, if the holder saw one.
func (w *worker) settle(h *tracked) {
	if h.stop() {
		op := w.op(opAnomaly, h.owner, h.token)
		op.Start, op.End = monoNow(), monoNow()
		op.Detail = "the lock context was still live after the final Unlock"
		w.rec.add(op)
		return
	}
	<-h.done
	if at := h.lostAt.Load(); at != 0 {
		op := w.op(opLost, h.owner, h.token)
		op.Start, op.End, op.Outcome = h.acquireStart, at, outOK
		op.Detail = context.Cause(h.ctx).Error()
		w.rec.add(op)
	}
}
