package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

const (
	// growthRun is how long the MemoryGrowth scenario runs at full speed.
	growthRun = 3 * time.Second
	// settleLimit bounds the wait for keys with an expiry, left by what ran
	// before, to go.
	settleLimit = 15 * time.Second
	// megabyte is the MB of the memory figures: 10^6 bytes.
	megabyte = 1e6
	// cronPass is long enough for Redis's clientsCron to visit every
	// client (all of them each second at the default hz): it shrinks a
	// new connection's 16 KB reply buffer to what the connection uses.
	cronPass = 2 * time.Second
)

// benchMemoryGrowth measures what a library leaves in Redis per request:
// Redis's used_memory and key count (DBSIZE) just before and just after
// growthRun of the Parallel scenario's loop (64 goroutines, each taking
// and releasing a lock of its own as fast as it can), when nothing is held
// any more. Reported as "MB-growth" (10^6 bytes) and "keys-left", with the
// run's "cycles/s" for the load that left them; each iteration is a run.
//
// What stays whatever the rate is kept out: each lock is taken once before,
// from 64 goroutines, so that the client's connections, the scripts Redis
// caches and what a lock name keeps for good (rlock's fencing counter, one
// key per name) are in the baseline; and the baseline is read only after
// Redis has shrunk the new connections' reply buffers (cronPass), which
// would otherwise count as some 16 KB less per connection, 0.3 MB for a
// go-redis pool. And so that no library is charged for keys of another
// expiring during its run, the baseline is read once no key with an expiry
// is left (waiting at most settleLimit; the benchmarks' own Redis has none
// of its own).
func benchMemoryGrowth(b *testing.B, node *redistest.Node) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			l, rc := p.open(b, node.Addr(), 0), node.Client(b)
			ctx := benchContext(b)
			names := lockNames(benchName(b), concurrency)
			op := ownLocks(ctx, l, names)
			require.NoError(b, parallel(len(names), concurrency, func(_, i int) error { return op(i) }),
				"take each lock once")
			time.Sleep(cronPass) // benchmark pacing: Redis's clientsCron, which shows nothing to wait on, visits every client
			var grown, left, cycles float64
			for b.Loop() {
				before := settle(ctx, b, rc)
				n, err := runFor(growthRun, concurrency, op)
				require.NoError(b, err, "%d cycles", n)
				after, err := redistest.ReadUsage(ctx, rc)
				require.NoError(b, err)
				grown += float64(after.UsedMemory-before.UsedMemory) / megabyte
				left += float64(after.Keys - before.Keys)
				cycles += float64(n) / growthRun.Seconds()
			}
			runs := float64(b.N)
			b.ReportMetric(grown/runs, "MB-growth")
			b.ReportMetric(left/runs, "keys-left")
			b.ReportMetric(cycles/runs, "cycles/s")
		})
	}
}

// settle waits until rc's server holds no key with an expiry, or for
// settleLimit, and returns what it holds then.
func settle(ctx context.Context, b *testing.B, rc rueidis.Client) redistest.Usage {
	b.Helper()
	end := time.Now().Add(settleLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		u, err := redistest.ReadUsage(ctx, rc)
		require.NoError(b, err)
		if u.Volatile == 0 {
			return u
		}
		if time.Now().After(end) {
			b.Logf("%d keys with an expiry still there after %v; measuring with them", u.Volatile, settleLimit)
			return u
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			b.Fatal(context.Cause(ctx))
		}
	}
}
