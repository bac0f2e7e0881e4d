package integration

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// The counters the benchmarks read before and after what they measure. Each
// is read from the one place that knows it: Redis's INFO for the server
// (redistest.ReadStats), the kernel for this process's CPU, the Go runtime
// for its heap.

// redisVersion is the version rc's server reports.
func redisVersion(b *testing.B, rc rueidis.Client) string {
	b.Helper()
	info, err := rc.Do(b.Context(), rc.B().Info().Section("server").Build()).ToString()
	require.NoError(b, err)
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

// processCPU is the CPU time this process has used so far, user and system,
// on every thread: the lock library's goroutines, the Redis client's, and
// the garbage collector's.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveMemory is the heap still reachable after a full collection (what the
// program holds, not what it has yet to free) and the goroutine stacks in
// use, which the heap does not count.
func liveMemory() (heap, stacks uint64) {
	// Two cycles: what the first frees may let go of more (weak pointers,
	// cleanups) in the second.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// cost measures what a stretch of a benchmark costs: CPU in this process
// and in Redis, and Redis commands.
type cost struct {
	b      *testing.B
	rc     rueidis.Client
	redis0 redistest.Stats
	cpu0   time.Duration
}

// startCost starts measuring the cost of what b does next on rc's server.
func startCost(b *testing.B, rc rueidis.Client) *cost {
	return &cost{b: b, rc: rc, redis0: redistest.ReadStats(b, rc), cpu0: processCPU(b)}
}

// report reports the cost so far per op, of ops ops, in units named after
// op: "cpu-µs/<op>", "redis-cpu-µs/<op>", "cmds/<op>" (every command Redis
// ran, including those inside scripts) and "scripts/<op>" (EVALSHA and
// EVAL calls).
func (c *cost) report(ops int, op string) {
	redis1, cpu1 := redistest.ReadStats(c.b, c.rc), processCPU(c.b)
	n := float64(ops)
	c.b.ReportMetric(micros(cpu1-c.cpu0)/n, "cpu-µs/"+op)
	c.b.ReportMetric(micros(redis1.CPU-c.redis0.CPU)/n, "redis-cpu-µs/"+op)
	// Less the INFO that took the first snapshot.
	c.b.ReportMetric(float64(redis1.Commands-c.redis0.Commands-1)/n, "cmds/"+op)
	c.b.ReportMetric(float64(redis1.Scripts()-c.redis0.Scripts())/n, "scripts/"+op)
}
