package integration

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// Settings of every reliability run. Leases are short so that faults which
// outlast them stay brief.
const (
	defaultLease     = 800 * time.Millisecond
	reliabilityRetry = 400 * time.Millisecond // rlock.WithRetryTimeout
	reliabilityWait  = 3 * time.Second        // TryLock's wait

	briefRun      = 6 * time.Second // a brief run's least length
	firstFault    = 1500 * time.Millisecond
	recovery      = 2 * time.Second  // a run goes on at least this long after its last fault
	faultCycle    = 6 * time.Second  // in a soak run, one fault per cycle at least
	maxIterations = 1000             // per worker in a brief run; a soak run is bounded by time
	childGrace    = 30 * time.Second // how long after its run a child may take to exit
)

// scenario is one kind of fault, injected into workers in three processes
// and four rlock Clients contending for one lock.
type scenario struct {
	name  string
	proxy bool // half the Clients reach the lock node through the harness proxy
	// deploy starts the lock's Redis and says how each process reaches
	// it; nil means deploySingle.
	deploy func(t *testing.T, sc scenario, r *run) deployment
	// victim says which process's first worker holds the lock when the
	// fault hits (see the victim protocol): victimLocal or victimChild.
	victim string
	// fixedVictim makes the victim's hold a fixed lease, not the watchdog's.
	fixedVictim bool
	// starve, if not 0, runs child process c0 on one P and makes it
	// starvable: n spinning goroutines (starveOnSignal).
	starve int
	// mayKeep says the fault may leave the victim its lock, so that no
	// newer holder need write before the victim is told to go on.
	mayKeep bool
	// keeps says the fault must leave the victim its lock: the victim is
	// told to go on as soon as the fault ends, and its hold must have
	// outlived the fault (checkKept).
	keeps bool
	// repeat is how many faults a brief run injects; 0 means one.
	repeat int
	// lease is the lease of every Client; 0 means defaultLease. Every
	// fault lasts twice as long, unless faultFor says otherwise.
	lease    time.Duration
	faultFor time.Duration
	// replicaAck, if not 0, gives every Client
	// rlock.WithReplicaAck(replicaAck, lease/2).
	replicaAck int
	// fault injects the fault once and returns its record; nil for the
	// fault-free baseline.
	fault func(r *run, ctx context.Context) (Op, error)
	// fair makes the workers take a FairMutex, and the history must be
	// first come, first served too.
	fair bool
	// rw makes the workers take an RWMutex, a writer and readers on each
	// Client, checked against the reader-writer model.
	rw bool
	// tolerate lists kinds of violation (the part of the message before
	// its colon) that the fault causes by design and that rlock cannot
	// prevent: they are counted and logged, not failed. Fencing violations
	// are never tolerated.
	tolerate []string
	// linearizeWithin bounds porcupine's search; 0 means linearizeTimeout.
	// A history with many acquires of unknown outcome, sent to a dying
	// master, can take porcupine far longer than a test may.
	linearizeWithin time.Duration
	// after, if set, makes the scenario's own checks of the merged history.
	after func(r *run, t *testing.T, ops []Op)
	// soakFor, if not 0, makes the run a soak of that length, with a fault
	// every cycle (faultCycle, or the fault and its recovery when longer).
	soakFor time.Duration
}

// overlapCosts are the kinds of violation that follow from two owners
// holding the lock at once, when a fault that no client can prevent causes
// it by design (a stepped Redis clock, a starved client process): the
// overlaps, porcupine's verdict on them, the unfenced counter's lost
// updates, and the fenced store refusing the older holder's write while it
// still believed it held the lock. A stale write that the store accepted
// is never among them.
var overlapCosts = []string{"overlap", "porcupine", "lost update", "counter", "write rejected in its hold's window"}

// Where a scenario's victim runs.
const (
	victimLocal = "p"  // the test process
	victimChild = "c0" // a child process, which the fault may freeze
)

// run is a scenario's system while it runs.
type run struct {
	lock     *redistest.Node // the lock's node, in a single-node deployment
	proxy    *redistest.Proxy
	cluster  *redistest.Cluster
	sentinel *redistest.Sentinel
	netns    *redistest.Netns
	clock    *redistest.FakeClock // the lock node's clock, when it is fake
	store    fencedStore
	rec      *recorder // the test process's history, faults included
	victim   victimHandle
	child    *child        // the victim's process, when it is a child
	children []*child      // every child process started, in order
	locks    []string      // the locks the workers contend for; the victim's first
	lease    time.Duration // of every Client
	mode     string        // how the processes reach the lock (deployment.mode)
	fault    time.Duration // how long each fault lasts: longer than the lease
	t        *testing.T
	deadline time.Time // when workers start their last iteration
}

// runScenario runs sc, checks the merged history, logs a summary, and
// returns the verdict and how many faults it injected.
func runScenario(t *testing.T, sc scenario) (verdict, int) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("reliability runs stop, kill and restart Redis: they need redis-server on PATH")
	}
	lease := cmp.Or(sc.lease, defaultLease)
	r := &run{lease: lease, fault: cmp.Or(sc.faultFor, 2*lease), t: t}
	length, soak := runLength(sc, r.fault)
	deploy := sc.deploy
	if deploy == nil {
		deploy = deploySingle
	}
	d := deploy(t, sc, r)
	r.mode = d.mode
	var storeArgs []string
	if d.storeHost != "" {
		storeArgs = []string{"--bind", "127.0.0.1", d.storeHost}
	}
	storeNode := redistest.New(t, redistest.Config{Backend: redistest.Process, Args: storeArgs})
	r.locks = d.locks
	if r.locks == nil {
		r.locks = []string{redistest.LockName(t)}
	}
	r.store = fencedStore{storeNode.Client(t), r.locks[0]} // the victim's lock

	dir := t.ArtifactDir() // go test -artifacts keeps the histories
	iterations := maxIterations
	if soak {
		iterations = 1 << 30
	}
	base := procConfig{Store: storeNode.Addr(), Locks: r.locks, Workers: max(2, len(r.locks)), MaxIterations: iterations,
		Run: length, Lease: lease, Retry: reliabilityRetry, Wait: reliabilityWait, Mode: d.mode, ReplicaAck: sc.replicaAck, Fair: sc.fair, RW: sc.rw}
	procs := []procConfig{
		with(base, "p", dir, sc, victimLocal, d.far, d.near),
		with(base, "c0", dir, sc, victimChild, d.far),
		with(base, "c1", dir, sc, "", d.near),
	}
	r.deadline = time.Now().Add(length)
	for _, cfg := range procs[1:] {
		if ns := d.netns[cfg.Proc]; ns != "" {
			_, port, _ := net.SplitHostPort(cfg.Store)
			cfg.Netns, cfg.Store = ns, net.JoinHostPort(d.storeHost, port)
		}
		r.startChild(t, cfg)
	}
	var local holdControl
	if procs[0].Victim {
		v := newLocalVictim()
		r.victim, local = v, v
	}
	rec, err := createRecorder(procs[0].Out)
	require.NoError(t, err)
	r.rec = rec

	var workers sync.WaitGroup
	var runErr error
	workers.Go(func() { runErr = runProcess(t.Context(), procs[0], rec, local) })
	faults := r.inject(t, sc, length, soak)
	workers.Wait()
	require.NoError(t, runErr)
	if r.child != nil {
		r.child.link.close()
	}
	outs := []string{procs[0].Out}
	for _, c := range r.children {
		c.wait(t, length+childGrace)
		outs = append(outs, c.cfg.Out)
	}
	require.NoError(t, rec.Close())

	ops, err := readHistory(outs...)
	require.NoError(t, err)
	var v verdict
	for i, lock := range r.locks {
		state, err := fencedStore{r.store.rc, lock}.state(t.Context())
		require.NoError(t, err)
		lops := opsOf(ops, lock)
		var lv verdict
		if sc.rw {
			lv = checkRWHistory(lops, state).verdict
		} else {
			lv = checkHistory(lops, state, cmp.Or(sc.linearizeWithin, linearizeTimeout))
		}
		if sc.fair {
			checkFIFO(lops, &lv)
		}
		if i == 0 {
			v = lv
		} else {
			v.add(lv)
		}
	}
	report(t, sc, ops, faults, v)
	if sc.after != nil {
		sc.after(r, t, ops)
	}
	return v, faults
}

// opsOf is the history of lock: its workers' ops, and every fault.
func opsOf(ops []Op, lock string) []Op {
	var out []Op
	for _, op := range ops {
		if op.Lock == lock || op.Lock == "" {
			out = append(out, op)
		}
	}
	return out
}

// startChild starts a worker process with cfg and, if cfg says it is the
// victim, makes it the run's victim.
func (r *run) startChild(t *testing.T, cfg procConfig) {
	c := startChild(t, cfg)
	r.children = append(r.children, c)
	if cfg.Victim {
		r.victim, r.child = c.link, c
	}
}

// with is base for process proc, whose Clients connect to addrs; it is
// sc's victim if proc is where sc puts it.
func with(base procConfig, proc, dir string, sc scenario, where string, addrs ...string) procConfig {
	base.Proc, base.Clients = proc, addrs
	base.Out = filepath.Join(dir, proc+".jsonl")
	if where != "" && sc.victim == where {
		base.Victim, base.FixedVictim = true, sc.fixedVictim
	}
	if proc == victimChild {
		base.Starve = sc.starve
	}
	return base
}

// runLength is how long workers run: as long as sc.soakFor says, or
// briefly, long enough for sc's faults, each of length fault, with the
// recovery after each.
func runLength(sc scenario, fault time.Duration) (length time.Duration, soak bool) {
	if sc.soakFor > 0 {
		return sc.soakFor, true
	}
	// A fault takes up to a second more than its length: the victim must
	// hold first, and a newer holder write after it.
	return max(briefRun, firstFault+time.Duration(max(sc.repeat, 1))*(fault+recovery+time.Second)), false
}

// inject runs the scenario's fault once (sc.repeat times), or in a soak
// run once per cycle while the run has room for it, and returns how many
// it injected.
func (r *run) inject(t *testing.T, sc scenario, length time.Duration, soak bool) int {
	if sc.fault == nil {
		return 0
	}
	end := time.Now().Add(length - r.fault - recovery)
	cycle := max(faultCycle, r.fault+recovery)
	timer := time.NewTimer(firstFault)
	defer timer.Stop()
	n := 0
	for {
		select {
		case <-timer.C:
		case <-t.Context().Done():
			return n
		}
		r.injectOnce(t, sc)
		n++
		pause := recovery // a brief run's faults follow each other closely
		if soak {
			pause = cycle - r.fault
		}
		if (!soak && n >= max(sc.repeat, 1)) || time.Now().Add(pause+r.fault).After(end) {
			return n
		}
		timer.Reset(pause)
	}
}

// injectOnce injects the scenario's fault once, while the victim, if there
// is one, holds the lock; then it lets the victim make its stale write.
func (r *run) injectOnce(t *testing.T, sc scenario) {
	var mark int64
	if r.victim != nil {
		err := r.victim.send(cmdArm)
		if err == nil {
			mark, err = r.victim.awaitHolding(10 * time.Second)
		}
		if err == nil && r.mode == modeRedLock {
			mark, err = r.store.counter(t.Context()) // no token: wait for a count instead
		}
		if err != nil {
			t.Errorf("victim: %v", err)
			_ = r.victim.send(cmdGo) // a victim that holds later must not wait
			return
		}
	}
	op, err := sc.fault(r, t.Context())
	if err != nil {
		t.Errorf("inject fault: %v", err)
	}
	r.rec.add(op)
	if r.victim == nil {
		return
	}
	// Where the victim keeps its lock, nobody newer can hold: it goes on at once.
	if !sc.keeps {
		if err := r.awaitNewerHolder(t.Context(), mark); err != nil && !sc.mayKeep {
			t.Errorf("no holder after the victim (mark %d) acted on the store: %v", mark, err)
		}
	}
	if err := r.victim.send(cmdGo); err != nil {
		t.Errorf("victim: %v", err)
	}
}

// awaitNewerHolder waits until a holder after the victim has acted on the
// store, so that the victim's write is known to be stale: until the store
// has accepted a write with a token above mark, the victim's token, or, for
// a RedLock, which has no tokens, until the counter has passed mark, its
// value when the victim held.
func (r *run) awaitNewerHolder(ctx context.Context, mark int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	progress := r.store.maxToken
	if r.mode == modeRedLock {
		progress = r.store.counter
	}
	for {
		seen, err := progress(ctx)
		if err == nil && seen > mark {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (the store is at %d; last error %v)", ctx.Err(), seen, err)
		case <-ticker.C:
		}
	}
}

// report fails t for each violation the checks found, but for those sc
// tolerates, which it counts; checks that the lock recovered after the last
// fault; and logs the scenario's summary line.
func report(t *testing.T, sc scenario, ops []Op, faults int, v verdict) {
	t.Helper()
	const shown = 20
	kinds, tolerated := map[string]int{}, map[string]int{}
	failed := 0
	for _, msg := range v.violations {
		kind, _, _ := strings.Cut(msg, ":")
		if slices.Contains(sc.tolerate, kind) {
			tolerated[kind]++
			if tolerated[kind] <= 3 {
				t.Logf("tolerated: %s", msg)
			}
			continue
		}
		kinds[kind]++
		if failed++; failed <= shown {
			t.Errorf("violation: %s", msg)
		}
	}
	if failed > shown {
		t.Errorf("... %d violations in all, by kind: %v", failed, kinds)
	}
	var faultEnd int64
	for _, op := range ops {
		if op.Kind == opFault || op.Kind == opFreeze || op.Kind == opKill {
			faultEnd = max(faultEnd, op.End)
		}
	}
	after := 0
	for _, op := range ops {
		if op.Kind == opSection && op.Outcome == outOK && op.Start > faultEnd {
			after++
		}
	}
	if after == 0 {
		t.Errorf("no critical section completed after the last fault: the lock did not recover")
	}
	margin := "-"
	if v.margin >= 0 {
		margin = v.margin.Round(10 * time.Microsecond).String()
	}
	t.Logf("summary: scenario=%s ops=%d holds=%d sections=%d lost=%d stale_rejected=%d guarded=%d guarded_refused=%d unfinished=%d faults=%d loss_margin=%s violations=%d tolerated=%v",
		sc.name, v.ops, v.holds, v.sections, v.lost, v.staleRejected, v.guarded, v.guardedRefused, v.unfinished, faults, margin, failed, tolerated)
}
