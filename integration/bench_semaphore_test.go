package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// benchSemaphore measures the Semaphore, a sub-benchmark of BenchmarkCompare:
//
//	AcquireRelease  uncontended Acquire+Release, one goroutine, beside
//	                MutexLockUnlock, the same through a Mutex
//	Permits16x64    64 goroutines on a 16-permit semaphore: cycles/s
//	Waiting100      Redis commands per second while 100 goroutines wait
//	                for a permit that nobody gives back: no polling
func benchSemaphore(b *testing.B, node *redistest.Node) {
	b.Run("AcquireRelease", func(b *testing.B) {
		sem := benchRlock(b, node).Semaphore(benchName(b))
		setPermits(b, sem, 1)
		benchHolds(b, node, sem.Acquire, sem.Release)
	})
	b.Run("MutexLockUnlock", func(b *testing.B) {
		mu := benchRlock(b, node).Mutex(benchName(b))
		benchHolds(b, node, mu.Lock, mu.Unlock)
	})
	b.Run("Permits16x64", func(b *testing.B) {
		sem := benchRlock(b, node).Semaphore(benchName(b))
		setPermits(b, sem, 16)
		ctx := benchContext(b)
		c := startCost(b, node.Client(b))
		throughput(b, concurrency, "cycles/s", func(int) error {
			pctx, err := sem.Acquire(ctx)
			if err != nil {
				return err
			}
			return sem.Release(pctx)
		})
		c.report(b.N, "cycle")
	})
	b.Run("Waiting100", func(b *testing.B) { benchSemaphoreWaiting(b, node) })
}

// benchHolds measures take followed by give, uncontended, from one
// goroutine, and what a cycle costs in this process and in Redis.
func benchHolds(b *testing.B, node *redistest.Node, take func(context.Context) (context.Context, error), give func(context.Context) error) {
	ctx := benchContext(b)
	c := startCost(b, node.Client(b))
	for b.Loop() {
		hctx, err := take(ctx)
		require.NoError(b, err)
		require.NoError(b, give(hctx))
	}
	c.report(b.N, "op")
}

// benchSemaphoreWaiting: 100 goroutines wait for the one permit, which a
// holder keeps; once they are asleep, the Redis commands of one second
// are counted (INFO commandstats), per iteration: all of them, the PINGs
// among them (rueidis keeps each connection alive with one a second), and
// the scripts. Then the holder lets go
// and the waiters take the permit in turn.
func benchSemaphoreWaiting(b *testing.B, node *redistest.Node) {
	const waiters = 100
	rc := node.Client(b)
	var cmds, scripts, pings int64
	for b.Loop() {
		sem := benchRlock(b, node).Semaphore(benchName(b))
		setPermits(b, sem, 1)
		ctx := benchContext(b)
		held, err := sem.Acquire(ctx)
		require.NoError(b, err)
		var wg sync.WaitGroup
		errs := make(chan error, waiters)
		start := redistest.ReadStats(b, rc)
		wait := func() {
			wg.Go(func() {
				pctx, err := sem.Acquire(ctx)
				if err == nil {
					err = sem.Release(pctx)
				}
				errs <- err
			})
		}
		attempts := func(n int64) {
			redistest.Eventually(b, fmt.Sprintf("%d acquire attempts", n), func(context.Context) error {
				if got := redistest.ReadStats(b, rc).Scripts() - start.Scripts(); got < n {
					return fmt.Errorf("%d acquire attempts by %d waiters", got, waiters)
				}
				return nil
			})
		}
		// The first waiter tries, subscribes (its Client once for all) and
		// tries again; the others, knowing the semaphore contended, try
		// once, after subscribing; then they all sleep.
		wait()
		attempts(2)
		redistest.WaitSubscribers(b, rc, keys.NewSemaphore(rlock.DefaultKeyPrefix, sem.Name()).Channel, 1)
		for range waiters - 1 {
			wait()
		}
		attempts(waiters + 1)
		before := redistest.ReadStats(b, rc)
		time.Sleep(time.Second) // the window measured: a second of waiting
		after := redistest.ReadStats(b, rc)
		cmds += after.Commands - before.Commands - 1 // less the first INFO
		scripts += after.Scripts() - before.Scripts()
		pings += after.Calls["ping"] - before.Calls["ping"]
		require.NoError(b, sem.Release(held))
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(b, err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(cmds)/n, "cmds/s-while-waiting")
	b.ReportMetric(float64(pings)/n, "pings/s-while-waiting") // rueidis's keep-alive, one per connection
	b.ReportMetric(float64(scripts)/n, "scripts/s-while-waiting")
}

// benchRlock returns an rlock Client on a rueidis client of node's,
// closed when b ends.
func benchRlock(b *testing.B, node *redistest.Node) *rlock.Client {
	c, err := rlock.New(newRueidis(b, node.Addr()))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, c.Close()) })
	return c
}

// setPermits gives sem n permits.
func setPermits(b *testing.B, sem *rlock.Semaphore, n int) {
	ok, err := sem.TrySetPermits(context.Background(), n)
	require.NoError(b, err)
	require.True(b, ok)
}
