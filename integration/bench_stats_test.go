package integration

import (
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// The counters the benchmarks read before and after what they measure. Each
// is read from the one place that knows it: Redis's INFO for the server,
// the kernel for this process's CPU, the Go runtime for its heap.

// redisStats is a snapshot of the server's counters.
type redisStats struct {
	commands int64            // every command run, including those inside scripts
	calls    map[string]int64 // calls per command, from INFO commandstats
	cpu      time.Duration    // the server's CPU time, user and system
}

// scripts is how many script calls (EVALSHA and EVAL) the snapshot counts.
func (s redisStats) scripts() int64 { return s.calls["evalsha"] + s.calls["eval"] }

// readRedisStats takes a snapshot of rc's server. The INFO call that reads
// it is one command; the deltas the benchmarks report are large against it.
func readRedisStats(b testing.TB, rc rueidis.Client) redisStats {
	b.Helper()
	info, err := rc.Do(b.Context(), rc.B().Info().Section("commandstats", "cpu").Build()).ToString()
	require.NoError(b, err)
	s := redisStats{calls: map[string]int64{}}
	for line := range strings.SplitSeq(info, "\r\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if name, found := strings.CutPrefix(key, "cmdstat_"); found {
			// cmdstat_<name>:calls=<n>,usec=...
			field, _, _ := strings.Cut(value, ",")
			n, err := strconv.ParseInt(strings.TrimPrefix(field, "calls="), 10, 64)
			require.NoError(b, err, "parse %q", line)
			s.calls[name] = n
			s.commands += n
			continue
		}
		if key == "used_cpu_user" || key == "used_cpu_sys" {
			sec, err := strconv.ParseFloat(value, 64)
			require.NoError(b, err, "parse %q", line)
			s.cpu += time.Duration(sec * float64(time.Second))
		}
	}
	return s
}

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
	redis0 redisStats
	cpu0   time.Duration
}

// startCost starts measuring the cost of what b does next on rc's server.
func startCost(b *testing.B, rc rueidis.Client) *cost {
	return &cost{b: b, rc: rc, redis0: readRedisStats(b, rc), cpu0: processCPU(b)}
}

// report reports the cost so far per op, of ops ops, in units named after
// op: "cpu-µs/<op>", "redis-cpu-µs/<op>", "cmds/<op>" (every command Redis
// ran, including those inside scripts) and "scripts/<op>" (EVALSHA and
// EVAL calls).
func (c *cost) report(ops int, op string) {
	redis1, cpu1 := readRedisStats(c.b, c.rc), processCPU(c.b)
	n := float64(ops)
	c.b.ReportMetric(micros(cpu1-c.cpu0)/n, "cpu-µs/"+op)
	c.b.ReportMetric(micros(redis1.cpu-c.redis0.cpu)/n, "redis-cpu-µs/"+op)
	// Less the INFO that took the first snapshot.
	c.b.ReportMetric(float64(redis1.commands-c.redis0.commands-1)/n, "cmds/"+op)
	c.b.ReportMetric(float64(redis1.scripts()-c.redis0.scripts())/n, "scripts/"+op)
}
