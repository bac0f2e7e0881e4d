package integration

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/rlock/rlock/internal/redistest"
)

// BenchmarkCompare measures rlock beside rueidislock, redsync and
// bsm/redislock, and the floor Redis itself sets, in one run against one
// local Redis. Each scenario lives in a file of its own (bench_*_test.go,
// handoff_bench_test.go) and is a sub-benchmark here:
//
//	Floor         raw EVALSHA: round trip, rlock's scripts, pipelined calls/s
//	LockUnlock    uncontended Lock+Unlock, one goroutine
//	Parallel      64 goroutines on distinct locks, cycles/s
//	MemoryGrowth  Redis used_memory and keys left by a 3 s run of Parallel's loop
//	HotLock       16 goroutines on one lock: acquisitions/s, min/max per goroutine
//	Handoff       Unlock to the next holder's Lock, 1 and 8 waiters
//	Watchdog      10 000 and 100 000 renewed locks: calls and CPU per round
//	Memory        heap per held lock and per waiter, allocations per cycle
//	Semaphore     Acquire+Release beside Mutex, 64 goroutines on 16 permits, commands while 100 wait
//	Do            Mutex.Do with one SET beside a plain SET and Lock+SET+Unlock
//
// Some scenarios take their time per iteration (a handoff to a polling
// peer, a watchdog round of a second), so give -benchtime as a duration,
// not a count. The whole run takes about three minutes:
//
//	go test ./integration -run '^$' -bench Compare -benchtime 2s -count 1 | go run ./integration/benchtable
//
// One scenario alone: -bench Compare/Handoff.
func BenchmarkCompare(b *testing.B) {
	node := benchNode(b)
	// Configuration lines, in the benchmark format's "key: value" form
	// beside goos, goarch and cpu, for benchtable and benchstat.
	fmt.Printf("go: %s\nnproc: %d\ngomaxprocs: %d\nredis: %s (%s backend)\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0),
		redisVersion(b, node.Client(b)), node.Backend())
	b.Run("Floor", func(b *testing.B) { benchFloor(b, node) })
	b.Run("LockUnlock", func(b *testing.B) { benchLockUnlock(b, node) })
	b.Run("Parallel", func(b *testing.B) { benchParallel(b, node) })
	b.Run("MemoryGrowth", func(b *testing.B) { benchMemoryGrowth(b, node) })
	b.Run("HotLock", func(b *testing.B) { benchHotLock(b, node) })
	b.Run("Handoff", func(b *testing.B) { benchHandoff(b, node) })
	b.Run("Watchdog", func(b *testing.B) { benchWatchdog(b, node) })
	b.Run("Memory", func(b *testing.B) { benchMemory(b, node) })
	b.Run("Semaphore", func(b *testing.B) { benchSemaphore(b, node) })
	b.Run("Do", func(b *testing.B) { benchDo(b, node) })
}

// benchNode starts the Redis the benchmarks share, stopped when b ends: the
// server at REDIS_ADDR when that is set, else a redis-server child process
// when one is on PATH, else the harness's preferred backend. A container is
// the last choice because Docker reaches its published port through a
// userland proxy, which on a 2-core machine more than doubles a round trip
// and takes CPU from the client and the server.
func benchNode(b *testing.B) *redistest.Node {
	backend := ""
	if os.Getenv("REDIS_ADDR") == "" && slices.Contains(redistest.Backends(b), redistest.Process) {
		backend = redistest.Process
	}
	return redistest.New(b, redistest.Config{Backend: backend})
}
