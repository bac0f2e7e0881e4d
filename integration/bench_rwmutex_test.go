package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// BenchmarkRWMutex measures rlock's RWMutex against its Mutex on one local
// Redis. rueidislock, redsync and bsm/redislock have no read-write lock,
// so there is no peer to run beside it.
//
//	ReadThroughput  64 goroutines on one lock: RLock+RUnlock of the
//	                RWMutex, and Lock+Unlock of a Mutex; cycles/s, and
//	                the CPU and Redis commands a cycle takes
//	WriterWait      a writer's wait for Lock while readers of 3 Clients
//	                keep the read lock held by overlapping holds; p50/p99
//
//	go test ./integration -run '^$' -bench RWMutex -benchtime 3s -count 1
func BenchmarkRWMutex(b *testing.B) {
	node := benchNode(b)
	fmt.Printf("redis: %s (%s backend)\n", redisVersion(b, node.Client(b)), node.Backend())
	b.Run("ReadThroughput", func(b *testing.B) { benchReadThroughput(b, node) })
	b.Run("WriterWait", func(b *testing.B) { benchWriterWait(b, node) })
}

// rlockClient returns an rlock Client on its own rueidis client of node,
// closed when b ends.
func rlockClient(b *testing.B, node *redistest.Node) *rlock.Client {
	c, err := rlock.New(newRueidis(b, node.Addr()))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, c.Close()) })
	return c
}

// benchReadThroughput: 64 goroutines of one Client take and leave one
// lock, each call a fresh owner: readers of an RWMutex, which share it,
// and a Mutex, which serialises them.
func benchReadThroughput(b *testing.B, node *redistest.Node) {
	b.Run("RLock", func(b *testing.B) {
		rw, ctx := rlockClient(b, node).RWMutex(benchName(b)), benchContext(b)
		c := startCost(b, node.Client(b))
		throughput(b, concurrency, "cycles/s", func(int) error {
			rctx, err := rw.RLock(ctx)
			if err != nil {
				return err
			}
			return rw.RUnlock(rctx)
		})
		c.report(b.N, "cycle")
	})
	b.Run("MutexLock", func(b *testing.B) {
		mu, ctx := rlockClient(b, node).Mutex(benchName(b)), benchContext(b)
		c := startCost(b, node.Client(b))
		throughput(b, concurrency, "cycles/s", func(int) error {
			lctx, err := mu.Lock(ctx)
			if err != nil {
				return err
			}
			return mu.Unlock(lctx)
		})
		c.report(b.N, "cycle")
	})
}

// Readers of the WriterWait scenario: each Client runs this many, each
// holding the read lock this long and starting again at once, so that the
// lock is never free of readers unless a writer holds readers back.
const (
	streamReaders = 4
	readHold      = 5 * time.Millisecond
	writerPause   = 20 * time.Millisecond // between a writer's Unlock and its next Lock
)

// benchWriterWait: readers of 3 Clients keep the read lock held by
// overlapping holds; a writer on a fourth Client takes the write lock b.N
// times, and the time each Lock waits is reported as p50 and p99, with the
// reads made meanwhile. Without writer preference such a writer would
// wait as long as the stream lasts.
func benchWriterWait(b *testing.B, node *redistest.Node) {
	name, ctx := benchName(b), benchContext(b)
	rctx, stop := context.WithCancel(ctx)
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		rw := rlockClient(b, node).RWMutex(name)
		for range streamReaders {
			wg.Go(func() {
				for rctx.Err() == nil {
					lctx, err := rw.RLock(rctx)
					if err != nil {
						continue // stopped
					}
					reads.Add(1)
					time.Sleep(readHold) // benchmark pacing: a read hold
					if err := rw.RUnlock(lctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	writer := rlockClient(b, node).RWMutex(name)
	waits := make([]time.Duration, 0, b.N)
	redistest.Eventually(b, "the readers' stream runs", func(context.Context) error {
		if n := reads.Load(); n < 4*streamReaders {
			return fmt.Errorf("%d reads", n)
		}
		return nil
	})
	b.ResetTimer()
	start := reads.Load()
	for b.Loop() {
		t0 := time.Now()
		wctx, err := writer.Lock(ctx)
		waits = append(waits, time.Since(t0))
		require.NoError(b, err)
		require.NoError(b, writer.Unlock(wctx))
		time.Sleep(writerPause) // benchmark pacing: readers stream between writes
	}
	b.StopTimer()
	made := reads.Load() - start
	stop()
	wg.Wait()
	slices.Sort(waits)
	b.ReportMetric(float64(percentile(waits, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(waits, 99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(made)/b.Elapsed().Seconds(), "reads/s")
}
