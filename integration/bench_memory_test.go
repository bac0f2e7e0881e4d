package integration

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

const (
	// memLocks is how many locks are held to measure the memory of one.
	memLocks = 10_000
	// memWaiters is how many callers wait on one lock to measure the
	// memory of one; the polling peers send a command per waiter every
	// 100 ms or so, which more waiters would turn into a load test.
	memWaiters = 1_000
	// memSettle is how long the waiters are given to block.
	memSettle = time.Second
)

// benchMemory measures what a library keeps in memory per held lock and
// per blocked waiter: the growth of the live heap after a full collection,
// and of goroutine stacks, with memLocks locks held (memWaiters callers
// waiting on one held lock), divided by their number, and the goroutines
// the library runs for each. A waiter's stack includes its caller's.
// The heap includes what the benchmark keeps per held lock, the same for
// every library: one unlock closure and its slot, some 50 bytes, with
// what the closure holds on to (for rlock, the Mutex handle and the lock
// context, as a caller would). Each client has taken and released as many
// locks (served as many waiters on another lock) before, so that
// connections it dials only under that load are not counted as the held
// locks' (the waiters'). Each iteration is an uncontended Lock+Unlock,
// reported with its allocations.
func benchMemory(b *testing.B, node *redistest.Node) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			l := p.open(b, node.Addr(), 0)
			name := benchName(b)
			names := lockNames(name+":held", memLocks)

			// As many locks held and released first, for the reason the
			// waiters are warmed up below: connections dialed only under
			// that load are the client's, not the held locks'.
			require.Zero(b, releaseAll(b, holdMany(b, l, lockNames(name+":warm-up", memLocks), concurrency), concurrency), "locks lost while held")
			held := measureMemory(func() func() {
				unlocks := holdMany(b, l, names, concurrency)
				return func() {
					require.Zero(b, releaseAll(b, unlocks, concurrency), "locks lost while held")
				}
			})
			waiter := p.open(b, node.Addr(), 0)
			// The same waiters on another lock first, so that what the
			// waiter's client sets up only under that load (rueidis dials
			// more connections, with 0.5 MiB of buffers each) is in place
			// before measuring, and not counted as the waiters'.
			blockWaiters(b, l, waiter, name+":warm-up", memWaiters)()
			// The median of three: runtime caches (sudogs, timers) that a
			// thousand blocked callers fill come and go with collections.
			waits := make([]growth, 3)
			for i := range waits {
				waits[i] = measureMemory(func() func() {
					return blockWaiters(b, l, waiter, fmt.Sprintf("%s:waited:%d", name, i), memWaiters)
				})
			}
			slices.SortFunc(waits, func(x, y growth) int { return cmp.Compare(x.heap, y.heap) })
			waiting := waits[1]

			b.ReportAllocs()
			cycles(b, l)
			// After the loop, which would reset them.
			held.report(b, memLocks, "held")
			// Less the caller's own goroutine.
			waiting.goroutines = max(waiting.goroutines-memWaiters, 0)
			waiting.report(b, memWaiters, "waiter")
		})
	}
}

// growth is how much memory grew: live heap and goroutine stacks in bytes,
// and goroutines.
type growth struct {
	heap, stacks, goroutines int64
}

// measureMemory returns how much memory grows while what setup sets up is
// in place; setup returns its undoing.
func measureMemory(setup func() (undo func())) growth {
	heap0, stacks0 := liveMemory()
	g0 := runtime.NumGoroutine()
	undo := setup()
	heap1, stacks1 := liveMemory()
	g1 := runtime.NumGoroutine()
	undo()
	return growth{
		heap:   int64(heap1) - int64(heap0),
		stacks: int64(stacks1) - int64(stacks0),
		// Goroutines of the runtime and of the clients come and go; a
		// count below zero is that noise.
		goroutines: max(int64(g1-g0), 0),
	}
}

// report reports g per each of n things: "B/<thing>" of heap,
// "stack-B/<thing>" and "goroutines/<thing>".
func (g growth) report(b *testing.B, n int, thing string) {
	b.ReportMetric(float64(g.heap)/float64(n), "B/"+thing)
	b.ReportMetric(float64(max(g.stacks, 0))/float64(n), "stack-B/"+thing)
	b.ReportMetric(float64(g.goroutines)/float64(n), "goroutines/"+thing)
}

// blockWaiters has holder take name and n callers wait for it through
// waiter, gives them memSettle to block, and returns how to end it all:
// cancel the callers, wait for them, and release the lock.
func blockWaiters(b *testing.B, holder, waiter locker, name string, n int) (undo func()) {
	b.Helper()
	ctx := benchContext(b)
	unlock, err := holder.lock(ctx, name)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg    sync.WaitGroup
		taken atomic.Int64 // waiters that took the held lock: a broken lock
	)
	for range n {
		wg.Go(func() {
			// Only cancellation should end the wait.
			if unlockWaiter, err := waiter.lock(ctx, name); err == nil {
				taken.Add(1)
				_ = unlockWaiter()
			}
		})
	}
	time.Sleep(memSettle) // benchmark pacing: the peers' waiters (some poll) show no common state to wait on
	return func() {
		cancel()
		wg.Wait()
		require.NoError(b, unlock())
		require.Zero(b, taken.Load(), "waiters took a lock that was held")
	}
}
