package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Semaphore runs: workers in the test process (three Clients) and in a
// child process contend for a few permits, with cancellations, a killed
// holder process and a Redis restart; the merged history is checked by
// checkSemaphore.
const (
	semPermits = 3
	semLease   = 800 * time.Millisecond
	semRetry   = 400 * time.Millisecond
)

// TestSemaphoreChaos: 6 workers on 3 Clients in this process and 2 in a
// child contend for 3 permits; a third of the acquires are given up
// mid-request. Once the workers here took permits 20 times, the child is
// killed (SIGKILL) as soon as its history shows it holding a permit; once
// its permits came back, Redis is killed and, two leases later, restarted
// empty, and an operator sets the permits again (a Redis that loses its
// data loses the permits too); the run ends once the workers took permits
// again. At no instant did more workers believe they
// held a permit than there are permits; the killed process's permits came
// back within their lease; afterwards every permit is free and no holder
// is left, so no given-up request took a permit later.
func TestSemaphoreChaos(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	setup := newRlock(t, raw).Semaphore(name)
	_, err := setup.TrySetPermits(t.Context(), semPermits)
	require.NoError(t, err)

	dir := t.TempDir()
	base := semProcConfig{Addr: node.Addr(), Name: name, Workers: 2, Lease: semLease, Retry: semRetry}
	local, remote := base, base
	local.Proc, local.Clients, local.Out = "p", 3, filepath.Join(dir, "p.jsonl")
	remote.Proc, remote.Clients, remote.Out = "c0", 1, filepath.Join(dir, "c0.jsonl")
	child := startSemaphoreChild(t, remote)
	rec, err := createRecorder(local.Out)
	require.NoError(t, err)

	ctx, stop := context.WithCancel(t.Context())
	var workers sync.WaitGroup
	var runErr error
	workers.Go(func() { runErr = runSemaphoreProcess(ctx, local, rec) })

	tookPermits(t, local.Out, 0, 20)
	holding(t, remote.Out, 20*time.Second)
	require.NoError(t, child.Process.Kill())
	rec.add(Op{Kind: opKill, Proc: remote.Proc, Detail: "SIGKILL", Start: monoNow(), End: monoNow()})

	redistest.Eventually(t, "the killed process's permits come back", func(context.Context) error {
		ops, err := readHistory(local.Out, remote.Out)
		if err != nil {
			return err // a line half written: read again
		}
		if v := checkSemaphore(ops, semPermits, monoNow()); len(v.comeback) != 1 || v.comeback[0] < 0 {
			return errors.New("the live workers have not held every permit at once since the kill")
		}
		return nil
	})
	restart := Op{Kind: opFault, Proc: "harness", Detail: "redis killed, restarted empty, permits set again", Start: monoNow()}
	require.NoError(t, node.Kill(t.Context()))
	time.Sleep(2 * semLease) // the fault: Redis stays down for two leases
	require.NoError(t, node.Restart(t.Context()))
	_, err = setup.TrySetPermits(t.Context(), semPermits)
	require.NoError(t, err)
	restart.End = monoNow()
	rec.add(restart)

	tookPermits(t, local.Out, restart.End, 20)
	stop()
	workers.Wait()
	runEnd := monoNow()
	require.NoError(t, runErr)
	require.NoError(t, rec.Close())

	ops, err := readHistory(local.Out, remote.Out)
	require.NoError(t, err)
	v := checkSemaphore(ops, semPermits, runEnd)
	counts, childOps := map[string]int{}, 0
	for _, op := range ops {
		counts[op.Kind+" "+op.Outcome]++
		if op.Proc == remote.Proc && op.Kind == opAcquire && op.Outcome == outOK {
			childOps++
		}
	}
	t.Logf("%d ops %v; at most %d permits believed held at once; the killed process's permits back after %v",
		len(ops), counts, v.most, time.Duration(v.comeback[0]))
	assert.Empty(t, v.violations, "never more permits held than there are")
	assert.Equal(t, semPermits, v.most, "the workers used every permit")
	require.Len(t, v.comeback, 1)
	assert.GreaterOrEqual(t, v.comeback[0], int64(0), "after the kill, the live workers held all permits again")
	// The bound is the property: the dead holder's permits expire with its
	// lease, and a loaded machine may add a second.
	assert.Less(t, time.Duration(v.comeback[0]), semLease+time.Second, "within the dead holder's lease")
	assert.Positive(t, childOps, "the killed process took permits before it died")
	assert.Positive(t, counts[opAcquire+" "+outUnknown], "acquires were given up mid-request")

	assert.Equal(t, semPermits, available(t, setup), "every permit is free once the workers stopped")
	assert.Eventually(t, keyGone(t, raw, keys.NewSemaphore(rlock.DefaultKeyPrefix, name).Hash), semLease, 20*time.Millisecond,
		"no holder is left behind")
}

// TestSemaphoreDeadProcessPermitsComeBack: a child process takes both
// permits of a semaphore and is killed (SIGKILL) while it holds them;
// a waiter in this process gets both within their lease.
func TestSemaphoreDeadProcessPermitsComeBack(t *testing.T) {
	node := faultNode(t)
	name := redistest.LockName(t)
	sem := newRlock(t, node.Client(t)).Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	child := startSemaphoreChild(t, semProcConfig{Proc: "c0", Addr: node.Addr(), Name: name, Lease: semLease, Retry: semRetry, Hold: 2})
	redistest.Eventually(t, "the child holds both permits", func(context.Context) error {
		return redistest.Exactly("available", available(t, sem), 0)
	})
	time.Sleep(2 * semLease) // the thing under test: two leases pass, and the child's watchdog renews the permits
	require.Equal(t, 0, available(t, sem), "renewed while the child lives")

	require.NoError(t, child.Process.Kill())
	killed := time.Now()
	first, ok, err := sem.TryAcquire(t.Context(), 5*semLease, 0)
	require.NoError(t, err)
	require.True(t, ok)
	second, ok, err := sem.TryAcquire(t.Context(), 5*semLease, 0)
	require.NoError(t, err)
	require.True(t, ok)
	back := time.Since(killed)
	t.Logf("both permits of the killed process back after %v (lease %v)", back, semLease)
	// The bound is the property: the dead holder's permits expire with its
	// lease, and a loaded machine may add a second.
	assert.Less(t, back, semLease+time.Second, "within the lease")
	require.NoError(t, sem.Release(first))
	require.NoError(t, sem.Release(second))
}

// tookPermits waits until the workers whose history is at path took
// permits n times in acquires that began after since (monoNow's clock):
// the run has gone on for that long.
func tookPermits(t *testing.T, path string, since int64, n int) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%d permits taken in %s", n, filepath.Base(path)), func(context.Context) error {
		ops, err := readHistory(path)
		if err != nil {
			return err // not written yet, or a line half written: read again
		}
		got := 0
		for _, op := range ops {
			if op.Kind == opAcquire && op.Outcome == outOK && op.Start > since {
				got++
			}
		}
		if got < n {
			return fmt.Errorf("%d permits taken", got)
		}
		return nil
	})
}

// holding waits up to timeout until the last op in the history file at
// path is an acquire that got a permit (the recorder writes every op at once), so that
// the child is killed while it holds one. It fails t if the child never
// took a permit; it gives up quietly on catching it in the act.
func holding(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	took := false
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(time.Millisecond) { // polls: a hold may be short
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the child has not started yet
		}
		require.NoError(t, err)
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		var last Op
		if json.Unmarshal(lines[len(lines)-1], &last) != nil {
			continue // a line half written
		}
		if last.Kind == opAcquire && last.Outcome == outOK {
			return
		}
		took = took || bytes.Contains(data, []byte(`"outcome":"ok"`))
		if took && time.Now().After(end.Add(-timeout/2)) {
			return
		}
	}
	require.True(t, took, "the child took no permit in %v", timeout)
}

// available reads sem's free permits.
func available(t *testing.T, sem *rlock.Semaphore) int {
	t.Helper()
	n, err := sem.Available(t.Context())
	require.NoError(t, err)
	return n
}
