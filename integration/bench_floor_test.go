package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// trivial is the cheapest script there is: what an EVALSHA costs in the
// network, the client and Redis's script machinery, and nothing more.
var trivial = rueidis.NewLuaScript("return 1")

// benchFloor measures the floor Redis itself sets, on the rueidis client
// setup that rlock runs on:
//
//   - roundtrip: one EVALSHA of `return 1`, from one goroutine, one after
//     the other. The latency targets are counted in these.
//   - scripts: rlock's own acquire and release scripts, sent raw one after
//     the other: one Lock+Unlock as Redis sees it, without rlock's Go code.
//   - minimal-scripts: the least pair of scripts a Lock+Unlock with
//     rlock's guarantees could be, as Redis sees it: an acquire that
//     issues a fencing token and writes the owner's count and sequence
//     number with a lease (INCR, HSET, PEXPIRE), and a release that reads
//     them back and deletes the lock (HMGET, DEL); no checks, no branches.
//     What it costs Redis is a bound no design with two scripts beats.
//   - pipelined: EVALSHA of `return 1` from 64 goroutines on one client,
//     which rueidis pipelines on its connection; reported in calls/s.
//   - parallel-minimal-scripts: minimal-scripts from 64 goroutines on
//     one client, each on a lock of its own, as the Parallel scenario
//     runs them; reported in cycles/s. No library running these two
//     scripts, or any with rlock's guarantees, goes faster through
//     rueidis on this machine.
//   - parallel-scripts: scripts from 64 goroutines in the same way: what
//     the Parallel scenario's rlock would reach without its Go code, so
//     that the gap to parallel-minimal-scripts is the scripts' checks and
//     the gap to the Parallel figure is rlock's own work in the client.
//   - roundtrip-idle=<d>: roundtrip after d of idleness, as p50 and p99:
//     what the first round trip costs once client and server have gone
//     to sleep, as they do between handoffs (relayHold, waiterSettle).
//     On a virtual machine that is several warm round trips.
//   - roundtrip-goredis: roundtrip on go-redis, which redsync and redislock
//     run on: one connection of its pool, written and read by the caller.
//
// The back-to-back ones report the CPU time an operation takes in this
// process and in Redis, and the commands Redis runs for it.
func benchFloor(b *testing.B, node *redistest.Node) {
	rc := newRueidis(b, node.Addr())
	b.Run("roundtrip", func(b *testing.B) {
		ctx, c := benchContext(b), startCost(b, rc)
		for b.Loop() {
			require.NoError(b, trivial.Exec(ctx, rc, nil, nil).Error())
		}
		c.report(b.N, "op")
	})
	b.Run("scripts", func(b *testing.B) {
		c := startCost(b, rc)
		benchmarkRawScripts(b, rc)
		c.report(b.N, "op")
	})
	b.Run("minimal-scripts", func(b *testing.B) {
		c := startCost(b, rc)
		benchmarkMinimalScripts(b, rc)
		c.report(b.N, "op")
	})
	b.Run("pipelined", func(b *testing.B) {
		ctx, c := benchContext(b), startCost(b, rc)
		throughput(b, concurrency, "calls/s", func(int) error {
			return trivial.Exec(ctx, rc, nil, nil).Error()
		})
		c.report(b.N, "call")
	})
	b.Run("parallel-minimal-scripts", func(b *testing.B) {
		c := startCost(b, rc)
		benchmarkParallelMinimalScripts(b, rc)
		c.report(b.N, "cycle")
	})
	b.Run("parallel-scripts", func(b *testing.B) {
		c := startCost(b, rc)
		benchmarkParallelRawScripts(b, rc)
		c.report(b.N, "cycle")
	})
	for _, idle := range []time.Duration{relayHold, waiterSettle} {
		b.Run("roundtrip-idle="+idle.String(), func(b *testing.B) {
			ctx := benchContext(b)
			latencies := make([]time.Duration, 0, 1024)
			for b.Loop() {
				time.Sleep(idle) // the thing measured: a round trip after the connection idled
				start := time.Now()
				require.NoError(b, trivial.Exec(ctx, rc, nil, nil).Error())
				latencies = append(latencies, time.Since(start))
			}
			reportLatencies(b, latencies)
		})
	}
	b.Run("roundtrip-goredis", func(b *testing.B) {
		gr := newGoRedis(b, node.Addr())
		script := goredislib.NewScript("return 1")
		ctx, c := benchContext(b), startCost(b, rc)
		for b.Loop() {
			require.NoError(b, script.Run(ctx, gr, nil).Err())
		}
		c.report(b.N, "op")
	})
}

// benchmarkRawScripts runs rlock's acquire and release scripts with the
// arguments Lock and Unlock send, a fresh sequence number each, and nothing
// else.
func benchmarkRawScripts(b *testing.B, rc rueidis.Client) {
	ctx := benchContext(b)
	k := keys.New("bench:", benchName(b))
	seq := 0
	for b.Loop() {
		require.NoError(b, rawCycle(ctx, rc, k, &seq))
	}
}

// benchmarkParallelRawScripts runs rawCycle from concurrency goroutines,
// each on a lock of its own with its own sequence numbers, and reports
// cycles/s.
func benchmarkParallelRawScripts(b *testing.B, rc rueidis.Client) {
	ctx, ks := benchContext(b), ownKeys(b)
	seqs := make([]int, concurrency) // each goroutine's own
	throughput(b, concurrency, "cycles/s", func(worker int) error { return rawCycle(ctx, rc, ks[worker], &seqs[worker]) })
}

// rawCycle is one Lock+Unlock of rlock's acquire and release scripts on
// the lock k, as Lock and Unlock send them, under the sequence numbers
// after *seq, which it advances.
func rawCycle(ctx context.Context, rc rueidis.Client, k keys.Keys, seq *int) error {
	const field = "client:owner"
	r := rawLock{rc: rc, acquire: lua.Acquire, release: lua.Release, k: k, seq: seq}
	acquired, err := r.take(ctx, field, "0")
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	if acquired[0] != int64(lua.Granted) {
		return fmt.Errorf("acquire reply %v", acquired)
	}
	released, err := r.free(ctx, field)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if released[0] != int64(lua.Freed) {
		return fmt.Errorf("release reply %v", released)
	}
	return nil
}

// rawLock sends one kind's acquire and release scripts to the lock k,
// with the arguments Lock and Unlock send for a first level under the
// watchdog's lease, and nothing else: each call under the sequence number
// after *seq, which it advances.
type rawLock struct {
	rc               rueidis.Client
	acquire, release *lua.Script
	k                keys.Keys
	seq              *int
}

// rawLease and rawFenceLife are the lease and the fence life a rawLock
// sends, in ms.
const rawLease, rawFenceLife = "30000", "40000"

// next returns the next sequence number.
func (r rawLock) next() string {
	*r.seq++
	return strconv.Itoa(*r.seq)
}

// take sends owner's acquire; waiting is "1" when owner waits for the
// lock (a fair lock queues it when it refuses), else "0".
func (r rawLock) take(ctx context.Context, owner, waiting string) ([]int64, error) {
	return r.acquire.Exec(ctx, r.rc, []string{r.k.Hash, r.k.Token, r.k.Fence, r.k.Queue, r.k.Channel},
		[]string{owner, r.next(), "1", rawLease, "0", rawFenceLife, waiting, "publish", rawLease, "1"}).AsIntSlice()
}

// free sends owner's release of its one level.
func (r rawLock) free(ctx context.Context, owner string) ([]int64, error) {
	return r.release.Exec(ctx, r.rc, []string{r.k.Hash, r.k.Channel, r.k.Fence, r.k.Token, r.k.Queue},
		[]string{owner, r.next(), "0", "publish", "0", rawFenceLife}).AsIntSlice()
}

// minimalAcquire and minimalRelease are the commands a Lock and an Unlock
// with fencing, re-entry counts and sequence numbers need, and nothing
// else (benchFloor's minimal-scripts).
var (
	minimalAcquire = rueidis.NewLuaScript(`local t = redis.call('incr', KEYS[2])
redis.call('hset', KEYS[1], ARGV[1], 1, ARGV[1] .. '#seq', ARGV[2])
redis.call('pexpire', KEYS[1], ARGV[3])
return {1, 1, t}`)
	minimalRelease = rueidis.NewLuaScript(`local h = redis.call('hmget', KEYS[1], ARGV[1], ARGV[1] .. '#seq')
redis.call('del', KEYS[1])
return {5, 0}`)
)

// benchmarkMinimalScripts runs minimalAcquire and minimalRelease one
// after the other, as Lock and Unlock would.
func benchmarkMinimalScripts(b *testing.B, rc rueidis.Client) {
	ctx := benchContext(b)
	k := keys.New("bench:", benchName(b))
	for b.Loop() {
		require.NoError(b, minimalCycle(ctx, rc, k))
	}
}

// benchmarkParallelMinimalScripts runs minimalCycle from concurrency
// goroutines, each on keys of its own, and reports cycles/s.
func benchmarkParallelMinimalScripts(b *testing.B, rc rueidis.Client) {
	ctx, ks := benchContext(b), ownKeys(b)
	throughput(b, concurrency, "cycles/s", func(worker int) error { return minimalCycle(ctx, rc, ks[worker]) })
}

// ownKeys returns the keys of concurrency locks unique to b's run, one
// for each goroutine of a parallel floor.
func ownKeys(b *testing.B) []keys.Keys {
	ks := make([]keys.Keys, concurrency)
	for i, name := range lockNames(benchName(b), concurrency) {
		ks[i] = keys.New("bench:", name)
	}
	return ks
}

// minimalCycle is one Lock+Unlock of minimalAcquire and minimalRelease
// on the lock k.
func minimalCycle(ctx context.Context, rc rueidis.Client, k keys.Keys) error {
	const field, lease = "client:owner", "30000"
	if err := minimalAcquire.Exec(ctx, rc, []string{k.Hash, k.Token}, []string{field, "1", lease}).Error(); err != nil {
		return err
	}
	return minimalRelease.Exec(ctx, rc, []string{k.Hash}, []string{field}).Error()
}
