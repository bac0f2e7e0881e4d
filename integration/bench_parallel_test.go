package integration

import (
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
			names := lockNames(benchName(b), concurrency)
			ctx := benchContext(b)
			c := startCost(b, node.Client(b))
			throughput(b, "cycles/s", func(worker int) error {
				return cycle(ctx, l, names[worker])
			})
			c.report(b.N, "cycle")
		})
	}
}

// throughput runs op b.N times on concurrency goroutines, each call given
// the number of the goroutine that makes it, and reports the calls per
// second as unit.
func throughput(b *testing.B, unit string, op func(worker int) error) {
	b.Helper()
	b.ResetTimer()
	err := parallel(b.N, concurrency, func(worker, _ int) error { return op(worker) })
	b.StopTimer()
	require.NoError(b, err, "%d calls", b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}
