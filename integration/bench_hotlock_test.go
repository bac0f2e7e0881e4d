package integration

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// hotLockers is how many goroutines contend for the one lock of the
// HotLock scenario.
const hotLockers = 16

// benchHotLock measures one lock in demand: 16 goroutines of one Client of
// each library take the same lock and release it at once, over and over,
// until b.N acquisitions have been made between them; reported in
// acquisitions/s. Beside it, fairness: the fewest acquisitions a goroutine
// made divided by the most ("min/max"; 1 is an even share, 0 means a
// goroutine starved). Each library waits as its README sets it up (peers):
// rlock and rueidislock are woken when the lock is freed, redsync and
// redislock poll. A poller's throughput can be high and its fairness poor,
// as the holder takes the lock back before a sleeping poller looks again;
// the two figures are read together. What an acquisition costs (commands,
// scripts, CPU here and in Redis) is reported beside them.
func benchHotLock(b *testing.B, node *redistest.Node) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) { benchmarkHotLock(b, node, p) })
	}
}

// benchmarkHotLock is HotLock for the lockers of one peer.
func benchmarkHotLock(b *testing.B, node *redistest.Node, p peer) {
	l, name := p.open(b, node.Addr(), 0), benchName(b)
	c := startCost(b, node.Client(b))
	b.ResetTimer()
	taken, err := contend(benchContext(b), l, name, hotLockers, b.N)
	b.StopTimer()
	require.NoError(b, err, "%d acquisitions", b.N)
	total := 0
	for _, n := range taken {
		total += n
	}
	c.report(total, "acquisition")
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "acquisitions/s")
	b.ReportMetric(fairness(taken), "min/max")
}

// errEnough ends a contention once it has made its acquisitions.
var errEnough = errors.New("enough acquisitions")

// contend has workers goroutines take name through l and release it at
// once, over and over, until n acquisitions have been made between them,
// and then cancels the calls still waiting, so that no goroutine's last
// wait (a poller's sleep) is counted. It returns the acquisitions of each
// goroutine, which may add up to a few more than n: those under way when
// the n-th was made.
func contend(ctx context.Context, l locker, name string, workers, n int) ([]int, error) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var total atomic.Int64
	// Each goroutine counts its own; they are read once all have returned.
	taken := make([]int, workers)
	err := spread(workers, func(int) bool { return ctx.Err() == nil }, func(worker, _ int) error {
		unlock, err := l.lock(ctx, name)
		if err != nil {
			if errors.Is(context.Cause(ctx), errEnough) {
				return nil
			}
			return err
		}
		taken[worker]++
		if total.Add(1) >= int64(n) {
			stop(errEnough)
		}
		return unlock()
	})
	return taken, err
}

// fairness is the fewest of counts divided by the most, or 1 when all are
// zero.
func fairness(counts []int) float64 {
	most := slices.Max(counts)
	if most == 0 {
		return 1
	}
	return float64(slices.Min(counts)) / float64(most)
}
