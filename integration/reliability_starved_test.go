package integration

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestReliabilityStarved starves the process that holds the lock of CPU for
// twice the lease, as an overloaded client machine would: one P
// (GOMAXPROCS=1) shared by the workers, rlock's timers and n goroutines
// that never block. The Go scheduler preempts a spinner every 10 ms or so,
// so a goroutine that wakes (a renewal, a lease deadline, a reply) waits on
// the order of n × 10 ms to run: far longer than rlock's clock-drift
// allowance (lease/100 + 2ms). The holder's renewals come too late, its key
// expires and another process takes the lock, while the starved process has
// yet to run the timer that ends the holder's context (or, starved less,
// the holder keeps its lock: the fault may leave it). rlock cannot prevent
// that from inside the starved process, and any hold of the starved process
// may outlive its key, not only the victim's; what must hold is fencing:
// the store refuses a starved holder's write once a newer holder has
// written (overlapCosts).
// How long each context outlived its key is counted and logged, not
// failed: it is the measured limit.
func TestReliabilityStarved(t *testing.T) {
	for _, n := range []int{8, 64} {
		t.Run(fmt.Sprintf("spinners=%d", n), func(t *testing.T) {
			runScenario(t, scenario{name: fmt.Sprintf("client-starved-%d", n), victim: victimChild, starve: n, mayKeep: true,
				repeat: starvedFaults, fault: (*run).starveHolder, tolerate: overlapCosts,
				after: (*run).logOutlived})
		})
	}
}

// starvedFaults is how many times a brief starved run starves its holder:
// the overlaps are counted over them.
const starvedFaults = 3

// starveHolder starves the victim's process for the fault's length: the
// first SIGUSR1 starts its spinners, the second stops them.
func (r *run) starveHolder(context.Context) (Op, error) {
	proc := r.child.cmd.Process
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: fmt.Sprintf("%s starved", r.child.cfg.Proc)}
	err := proc.Signal(syscall.SIGUSR1)
	time.Sleep(r.fault) // the fault lasts r.fault
	if err == nil {
		err = proc.Signal(syscall.SIGUSR1)
	}
	op.End = monoNow()
	return op, err
}

// logOutlived logs, for each hold of the victim's process that was lost,
// how long its context outlived the moment another process held the lock:
// the hold windows are the checker's (buildHolds).
func (r *run) logOutlived(t *testing.T, ops []Op) {
	holds := buildHolds(ops, &verdict{})
	var outlived []time.Duration
	lost := 0
	for _, h := range holds {
		if !h.lost || h.proc != victimChild {
			continue
		}
		lost++
		for _, next := range holds { // in acquire order: the first other hold after h's start
			if next.proc != h.proc && !next.empty() && next.start > h.start {
				if next.start < h.end {
					outlived = append(outlived, time.Duration(h.end-next.start).Round(time.Millisecond))
				}
				break
			}
		}
	}
	t.Logf("starved holders: %d lost, %d of them with a context that outlived their key, by %v", lost, len(outlived), outlived)
}

// starveOnSignal runs the process on one P and, between one SIGUSR1 and
// the next, n spinning goroutines beside its own. stop ends the spinning
// and the signal handling, and restores GOMAXPROCS.
func starveOnSignal(n int) (stop func()) {
	prev := runtime.GOMAXPROCS(1)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	quit := make(chan struct{})
	var spinning atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		var spinners sync.WaitGroup
		defer spinners.Wait()
		defer spinning.Store(false)
		for {
			select {
			case <-sigs:
			case <-quit:
				return
			}
			if spinning.Load() {
				spinning.Store(false)
				spinners.Wait()
				continue
			}
			spinning.Store(true)
			for range n {
				spinners.Go(func() {
					for x := 0; spinning.Load(); x++ {
						_ = x * x
					}
				})
			}
		}
	})
	return func() {
		signal.Stop(sigs)
		close(quit)
		wg.Wait()
		runtime.GOMAXPROCS(prev)
	}
}
