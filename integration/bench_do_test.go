package integration

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// benchDo measures a write that only the lock's holder can make, a
// sub-benchmark of BenchmarkCompare, from one goroutine, uncontended:
//
//	PlainSET       a SET, no lock: the floor, one round trip
//	DoSET          Mutex.Do with one SET, the lock held throughout: one
//	               round trip, the SET inside do.lua's ownership check
//	LockSETUnlock  Lock, SET, Unlock: what a holder pays without Do, three
//	               round trips, and the SET is not guarded against a lost lock
//
// Each reports what an op costs in this process and in Redis.
func benchDo(b *testing.B, node *redistest.Node) {
	b.Run("PlainSET", func(b *testing.B) {
		rc := newRueidis(b, node.Addr())
		key := benchName(b)
		ctx := benchContext(b)
		c := startCost(b, node.Client(b))
		for b.Loop() {
			require.NoError(b, rc.Do(ctx, setCmd(rc, key)).Error())
		}
		c.report(b.N, "op")
	})
	b.Run("DoSET", func(b *testing.B) {
		rc := newRueidis(b, node.Addr())
		mu := benchRlock(b, node).Mutex(benchName(b))
		key := mu.Key("v")
		lctx, err := mu.Lock(benchContext(b))
		require.NoError(b, err)
		c := startCost(b, node.Client(b))
		for b.Loop() {
			_, err := mu.Do(lctx, setCmd(rc, key))
			require.NoError(b, err)
		}
		c.report(b.N, "op")
		require.NoError(b, mu.Unlock(lctx))
	})
	b.Run("LockSETUnlock", func(b *testing.B) {
		rc := newRueidis(b, node.Addr())
		mu := benchRlock(b, node).Mutex(benchName(b))
		key := mu.Key("v")
		ctx := benchContext(b)
		c := startCost(b, node.Client(b))
		for b.Loop() {
			lctx, err := mu.Lock(ctx)
			require.NoError(b, err)
			require.NoError(b, rc.Do(lctx, setCmd(rc, key)).Error())
			require.NoError(b, mu.Unlock(lctx))
		}
		c.report(b.N, "op")
	})
}

// setCmd is the SET the Do benchmarks write.
func setCmd(rc rueidis.Client, key string) rueidis.Completed {
	return rc.B().Set().Key(key).Value("v").Build()
}
