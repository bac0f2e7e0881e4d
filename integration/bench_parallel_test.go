package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// concurrency is how many goroutines the throughput scenarios run.
const concurrency = 64

// benchParallel measures lock throughput: 64 goroutines, each taking
// and releasing a lock of its own over and over, in one Client of each
// library; reported in cycles/s. Nothing contends, so it measures how well
// a library carries many callers at once: rueidis pipelines them on one
// connection, go-redis hands each its own pooled connection (20 on a
// 2-core machine, the default), and the others wait for one. Redis sets
// its floor at half the pipelined calls/s (Floor/pipelined): two scripts a
// cycle. On two cores the client and Redis share, throughput follows the
// CPU a cycle takes, so that is reported too, in this process and in Redis.
func benchParallel(b *testing.B, node *redistest.Node) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			l := p.open(b, node.Addr(), 0)
			op := ownLocks(benchContext(b), l, lockNames(benchName(b), concurrency))
			c := startCost(b, node.Client(b))
			throughput(b, concurrency, "cycles/s", op)
			c.report(b.N, "cycle")
		})
	}
}

// ownLocks is the loop body of the Parallel scenario: goroutine worker
// takes its own lock, names[worker], through l and releases it at once.
func ownLocks(ctx context.Context, l locker, names []string) func(worker int) error {
	return func(worker int) error { return cycle(ctx, l, names[worker]) }
}

// throughput runs op b.N times on workers goroutines, each call given the
// number of the goroutine that makes it, and reports the calls per second
// as unit.
func throughput(b *testing.B, workers int, unit string, op func(worker int) error) {
	b.Helper()
	b.ResetTimer()
	err := parallel(b.N, workers, func(worker, _ int) error { return op(worker) })
	b.StopTimer()
	require.NoError(b, err, "%d calls", b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}
