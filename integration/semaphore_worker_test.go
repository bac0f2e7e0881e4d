package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// semaphoreWorkerEnv carries a semaphore child process's semProcConfig, as
// JSON. Its presence is what makes TestSemaphoreWorker run.
const semaphoreWorkerEnv = "RLOCK_SEMAPHORE_WORKER"

// semProcConfig is what one process of a semaphore run does.
type semProcConfig struct {
	Proc    string        // "p" for the test process, "c0", ... for children
	Addr    string        // the semaphore's Redis
	Name    string        // the semaphore
	Clients int           // rlock Clients in the process
	Workers int           // workers per Client
	Lease   time.Duration // every Client's watchdog lease
	Retry   time.Duration // every Client's retry timeout
	Out     string        // the history file
	// Hold, when positive, makes the process take Hold permits with one
	// owner and keep them until it is killed, recording nothing.
	Hold int
	// Await makes the process wait on the count-down latch Name instead,
	// and write to Out the wall-clock time, in ns, at which Await returned.
	Await bool
}

// TestSemaphoreWorker is the body of a semaphore run's child processes:
// the semaphore tests run this test binary again with semaphoreWorkerEnv
// set. Run directly, it skips.
func TestSemaphoreWorker(t *testing.T) {
	raw, ok := os.LookupEnv(semaphoreWorkerEnv)
	if !ok {
		t.Skip(semaphoreWorkerEnv + " is unset: this test is the worker process that the semaphore tests start themselves")
	}
	var cfg semProcConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &cfg))
	switch {
	case cfg.Hold > 0:
		require.NoError(t, holdPermits(t.Context(), cfg))
		return
	case cfg.Await:
		require.NoError(t, awaitLatch(t.Context(), cfg))
		return
	}
	rec, err := createRecorder(cfg.Out)
	require.NoError(t, err)
	// A child runs until it is killed: the recorder writes every op at once, so
	// that the history shows what it did up to then.
	runErr := runSemaphoreProcess(t.Context(), cfg, rec)
	require.NoError(t, errors.Join(runErr, rec.Close()))
}

// startSemaphoreChild runs the test binary again as a semaphore worker
// process with cfg; it is killed, if still running, when t ends.
func startSemaphoreChild(t *testing.T, cfg semProcConfig) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSemaphoreWorker$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), semaphoreWorkerEnv+"="+string(raw))
	require.NoError(t, cmd.Start(), "start semaphore worker %s", cfg.Proc)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // killed on purpose: its status says nothing
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd
}

// semaphoreClients returns cfg's rlock Clients on one rueidis client of
// their own each, dialled as the reliability workers dial (a node that a
// fault has down is tried again), and a function that closes them all.
func semaphoreClients(ctx context.Context, cfg semProcConfig) ([]*rlock.Client, func(), error) {
	var clients []*rlock.Client
	var raws []rueidis.Client
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
		for _, rc := range raws {
			rc.Close()
		}
	}
	for range max(cfg.Clients, 1) {
		rc, err := redistest.Dial(ctx, redistest.ClientOption(cfg.Addr))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		raws = append(raws, rc)
		c, err := rlock.New(rc, rlock.WithLeaseTime(cfg.Lease), rlock.WithRetryTimeout(cfg.Retry))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, c)
	}
	return clients, closeAll, nil
}

// awaitLatch waits on the latch cfg.Name and writes the time it returned
// to cfg.Out.
func awaitLatch(ctx context.Context, cfg semProcConfig) error {
	clients, closeAll, err := semaphoreClients(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := clients[0].CountDownLatch(cfg.Name).Await(ctx); err != nil {
		return err
	}
	return os.WriteFile(cfg.Out, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
}

// holdPermits takes cfg.Hold permits with one owner, then waits for ctx
// (the process is killed before).
func holdPermits(ctx context.Context, cfg semProcConfig) error {
	clients, closeAll, err := semaphoreClients(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	sem := clients[0].Semaphore(cfg.Name)
	for range cfg.Hold {
		if ctx, err = sem.Acquire(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// runSemaphoreProcess runs cfg's workers until ctx is done, recording
// their ops in rec, which writes each op to its file at once.
func runSemaphoreProcess(ctx context.Context, cfg semProcConfig, rec *recorder) error {
	clients, closeAll, err := semaphoreClients(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	var wg sync.WaitGroup
	for i, c := range clients {
		for j := range cfg.Workers {
			w := semWorker{proc: cfg.Proc, name: fmt.Sprintf("w%d.%d", i, j), sem: c.Semaphore(cfg.Name), rec: rec}
			wg.Go(func() { w.run(ctx) })
		}
	}
	wg.Wait()
	return nil
}

// semWorker takes a permit, holds it a few ms, and gives it back, in a
// loop; a third of its acquires have a deadline of 0-30 ms, so many are
// given up mid-request.
type semWorker struct {
	proc, name string
	sem        *rlock.Semaphore
	rec        *recorder
}

func (w *semWorker) add(op Op) {
	op.Proc, op.Worker = w.proc, w.name
	w.rec.add(op)
}

// invoke records the invocation of the call op, before it is sent, and
// returns op numbered, to be completed and added once it returned.
func (w *semWorker) invoke(op Op) Op {
	op.Proc, op.Worker = w.proc, w.name
	return w.rec.invoke(op)
}

func (w *semWorker) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		owner := fmt.Sprintf("%s/%s/%d", w.proc, w.name, i)
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if rand.IntN(3) == 0 {
			actx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(30_000))*time.Microsecond)
		}
		op := w.invoke(Op{Kind: opAcquire, Owner: owner})
		pctx, ok, err := w.sem.TryAcquire(actx, time.Second, 0)
		op.End = monoNow()
		switch {
		case err != nil:
			op.Outcome, op.Detail = outUnknown, err.Error()
		case ok:
			op.Outcome = outOK
		default:
			op.Outcome = outFailed
		}
		w.add(op)
		if !ok {
			cancel()
			if err != nil {
				time.Sleep(20 * time.Millisecond) // workload pacing: Redis may be down, so no busy loop
			}
			continue
		}
		w.hold(pctx, owner)
		cancel()
	}
}

// hold keeps the permit pctx carries a few ms and gives it back, recording
// the moment a loss ended the permit's context, if one did.
func (w *semWorker) hold(pctx context.Context, owner string) {
	lost := make(chan int64, 1)
	stop := context.AfterFunc(pctx, func() {
		if errors.Is(context.Cause(pctx), rlock.ErrLockLost) {
			lost <- monoNow()
		}
	})
	time.Sleep(time.Duration(1+rand.IntN(20)) * time.Millisecond) // workload pacing: a hold of a few ms
	select {
	case at := <-lost:
		w.add(Op{Kind: opLost, Owner: owner, Start: at, End: at, Outcome: outOK})
	default:
	}
	rel := w.invoke(Op{Kind: opRelease, Owner: owner, Final: true})
	err := w.sem.Release(pctx) // also when pctx is done: Release detaches
	rel.End = monoNow()
	stop()
	switch {
	case err == nil:
		rel.Outcome = outOK
	case errors.Is(err, rlock.ErrNotHeld):
		rel.Outcome = outFailed
	default:
		rel.Outcome, rel.Detail = outUnknown, err.Error()
	}
	w.add(rel)
}
