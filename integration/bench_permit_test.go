package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkPermit measures travelling permits beside the Semaphore's
// context-bound ones, on the same node:
//
//	AcquireRelease              uncontended Acquire+Release, one goroutine
//	AcquirePermitReleasePermit  uncontended AcquirePermit on one Client,
//	                            ReleasePermit on another, one goroutine
//	Permits16x64                64 goroutines on a 16-permit semaphore,
//	                            each permit given back by a second Client:
//	                            cycles/s
//
//	go test ./integration -run '^$' -bench BenchmarkPermit -benchtime 2000x
func BenchmarkPermit(b *testing.B) {
	node := benchNode(b)
	b.Run("AcquireRelease", func(b *testing.B) {
		sem := benchRlock(b, node).Semaphore(benchName(b))
		setPermits(b, sem, 1)
		benchHolds(b, node, sem.Acquire, sem.Release)
	})
	b.Run("AcquirePermitReleasePermit", func(b *testing.B) {
		name := benchName(b)
		front, worker := benchRlock(b, node).Semaphore(name), benchRlock(b, node).Semaphore(name)
		setPermits(b, front, 1)
		ctx := benchContext(b)
		c := startCost(b, node.Client(b))
		for b.Loop() {
			id, err := front.AcquirePermit(ctx, time.Minute)
			require.NoError(b, err)
			require.NoError(b, worker.ReleasePermit(ctx, id))
		}
		c.report(b.N, "op")
	})
	b.Run("Permits16x64", func(b *testing.B) {
		name := benchName(b)
		front, worker := benchRlock(b, node).Semaphore(name), benchRlock(b, node).Semaphore(name)
		setPermits(b, front, 16)
		ctx := benchContext(b)
		c := startCost(b, node.Client(b))
		throughput(b, concurrency, "cycles/s", func(int) error {
			id, err := front.AcquirePermit(ctx, time.Minute)
			if err != nil {
				return err
			}
			return worker.ReleasePermit(ctx, id)
		})
		c.report(b.N, "cycle")
	})
}
