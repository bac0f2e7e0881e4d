package integration

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

	briefRun      = 6 * time.Second // a run's least length without RLOCK_SOAK
	firstFault    = 1500 * time.Millisecond
	recovery      = 2 * time.Second  // a run goes on at least this long after its last fault
	faultCycle    = 6 * time.Second  // under RLOCK_SOAK, one fault per cycle at least
	maxIterations = 1000             // per worker in a brief run; a soak run is bounded by time
	soakEnv       = "RLOCK_SOAK"     // e.g. RLOCK_SOAK=10m: each scenario runs that long
	childGrace    = 30 * time.Second // how long after its run a child may take to exit
)

// scenario is one kind of fault, injected into workers in three processes
// and four rlock Clients contending for one lock.
type scenario struct {
	name  string
	proxy bool // half the Clients reach the lock node through the harness proxy
	// victim says which process's first worker holds the lock when the
	// fault hits (see the victim protocol): victimLocal or victimChild.
	victim string
	// lease is the lease of every Client; 0 means defaultLease. Every
	// fault lasts twice as long.
	lease time.Duration
	// fault injects the fault once and returns its record; nil for the
	// fault-free baseline.
	fault func(r *run, ctx context.Context) (Op, error)
}

// Where a scenario's victim runs.
const (
	victimLocal = "p"  // the test process
	victimChild = "c0" // a child process, which the fault may freeze
)

// run is a scenario's system while it runs.
type run struct {
	lock   *redistest.Node
	proxy  *redistest.Proxy
	store  fencedStore
	rec    *recorder // the test process's history, faults included
	victim victimHandle
	child  *child        // the victim's process, when it is a child
	fault  time.Duration // how long each fault lasts: longer than the lease
}

// runScenario runs sc, checks the merged history and logs a summary.
func runScenario(t *testing.T, sc scenario) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("reliability runs stop, kill and restart Redis: they need redis-server on PATH")
	}
	lease := cmp.Or(sc.lease, defaultLease)
	r := &run{fault: 2 * lease}
	length, soak := runLength(t, r.fault)
	lockNode := redistest.New(t, redistest.Config{Backend: redistest.Process})
	storeNode := redistest.New(t, redistest.Config{Backend: redistest.Process})
	r.lock, r.store = lockNode, fencedStore{storeNode.Client(t)}
	near, far := lockNode.Addr(), lockNode.Addr()
	if sc.proxy {
		r.proxy = lockNode.Proxy(t)
		far = r.proxy.Addr()
	}

	dir := t.ArtifactDir() // go test -artifacts keeps the histories
	iterations := maxIterations
	if soak {
		iterations = 1 << 30
	}
	base := procConfig{Store: storeNode.Addr(), Lock: redistest.LockName(t), Workers: 2, MaxIterations: iterations,
		Run: length, Lease: lease, Retry: reliabilityRetry, Wait: reliabilityWait}
	procs := []procConfig{
		with(base, "p", dir, sc.victim == victimLocal, far, near),
		with(base, "c0", dir, sc.victim == victimChild, far),
		with(base, "c1", dir, false, near),
	}
	var children []*child
	for _, cfg := range procs[1:] {
		c := startChild(t, cfg)
		children = append(children, c)
		if cfg.Victim {
			r.victim, r.child = c.link, c
		}
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
	for _, c := range children {
		c.wait(t, length+childGrace)
	}
	require.NoError(t, rec.Close())

	var outs []string
	for _, cfg := range procs {
		outs = append(outs, cfg.Out)
	}
	ops, err := readHistory(outs...)
	require.NoError(t, err)
	state, err := r.store.state(t.Context())
	require.NoError(t, err)
	report(t, sc.name, ops, faults, checkHistory(ops, state))
}

// with is base for process proc, whose Clients connect to addrs.
func with(base procConfig, proc, dir string, victim bool, addrs ...string) procConfig {
	base.Proc, base.Clients, base.Victim = proc, addrs, victim
	base.Out = filepath.Join(dir, proc+".jsonl")
	return base
}

// runLength is how long workers run: briefly, long enough for one fault of
// length fault and the recovery after it, or as RLOCK_SOAK says.
func runLength(t *testing.T, fault time.Duration) (length time.Duration, soak bool) {
	brief := max(briefRun, firstFault+fault+recovery+time.Second)
	raw := os.Getenv(soakEnv)
	if raw == "" {
		return brief, false
	}
	d, err := time.ParseDuration(raw)
	require.NoError(t, err, "%s=%q", soakEnv, raw)
	require.GreaterOrEqual(t, d, brief, "%s is shorter than a brief run", soakEnv)
	return d, true
}

// inject runs the scenario's fault once, or under RLOCK_SOAK once per cycle
// while the run has room for it, and returns how many it injected.
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
		if !soak || time.Now().Add(cycle).After(end) {
			return n
		}
		timer.Reset(cycle - r.fault)
	}
}

// injectOnce injects the scenario's fault once, while the victim, if there
// is one, holds the lock; then it lets the victim make its stale write.
func (r *run) injectOnce(t *testing.T, sc scenario) {
	var token int64
	if r.victim != nil {
		err := r.victim.send(cmdArm)
		if err == nil {
			token, err = r.victim.awaitHolding(10 * time.Second)
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
	if err := r.awaitNewerWrite(t.Context(), token); err != nil {
		t.Errorf("no holder after the victim (token %d) wrote to the store: %v", token, err)
	}
	if err := r.victim.send(cmdGo); err != nil {
		t.Errorf("victim: %v", err)
	}
}

// awaitNewerWrite waits until the store has accepted a write with a token
// above token, so that the victim's write is known to be stale.
func (r *run) awaitNewerWrite(ctx context.Context, token int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		seen, err := r.store.maxToken(ctx)
		if err == nil && seen > token {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (the store's highest token is %d; last error %v)", ctx.Err(), seen, err)
		case <-ticker.C:
		}
	}
}

// report fails t for each violation the checks found, checks that the lock
// recovered after the last fault, and logs the scenario's summary line.
func report(t *testing.T, name string, ops []Op, faults int, v verdict) {
	t.Helper()
	const shown = 20
	kinds := map[string]int{}
	for i, msg := range v.violations {
		kind, _, _ := strings.Cut(msg, ":")
		kinds[kind]++
		if i < shown {
			t.Errorf("violation: %s", msg)
		}
	}
	if len(v.violations) > shown {
		t.Errorf("... %d violations in all, by kind: %v", len(v.violations), kinds)
	}
	var faultEnd int64
	for _, op := range ops {
		if op.Kind == opFault || op.Kind == opFreeze {
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
	t.Logf("summary: scenario=%s ops=%d holds=%d sections=%d lost=%d stale_rejected=%d faults=%d loss_margin=%s violations=%d",
		name, v.ops, v.holds, v.sections, v.lost, v.staleRejected, faults, margin, len(v.violations))
}
