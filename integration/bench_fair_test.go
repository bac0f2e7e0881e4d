package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/rlock"
)

// BenchmarkFair measures FairMutex beside Mutex and the peers, in one run
// against one local Redis (as BenchmarkCompare):
//
//	Floor/roundtrip           one EVALSHA of `return 1`, back to back
//	Floor/roundtrip-idle=2ms  the same after relayHold of idleness, as a
//	                          relay's Unlock finds the connection
//	Handoff/waiters=8/<peer>  Unlock to the next holder's Lock in a relay of
//	                          nine owners (handoff_bench_test.go)
//	HotLock/<peer>            16 goroutines on one lock: acquisitions/s and
//	                          fairness min/max (bench_hotlock_test.go)
//
//	go test ./integration -run '^$' -bench Fair -benchtime 3s -count 1
func BenchmarkFair(b *testing.B) {
	node := benchNode(b)
	fairPeers := append([]peer{{"rlock-fair", openRlockFair, true}}, peers...)
	rc := newRueidis(b, node.Addr())
	b.Run("Floor/roundtrip", func(b *testing.B) {
		ctx := benchContext(b)
		for b.Loop() {
			require.NoError(b, trivial.Exec(ctx, rc, nil, nil).Error())
		}
	})
	b.Run("Floor/roundtrip-idle="+relayHold.String(), func(b *testing.B) {
		ctx := benchContext(b)
		latencies := make([]time.Duration, 0, 1024)
		for b.Loop() {
			time.Sleep(relayHold)
			start := time.Now()
			require.NoError(b, trivial.Exec(ctx, rc, nil, nil).Error())
			latencies = append(latencies, time.Since(start))
		}
		reportLatencies(b, latencies)
	})
	for _, p := range fairPeers {
		b.Run("Handoff/waiters=8/"+p.name, func(b *testing.B) { benchmarkRelay(b, node, p, 8) })
	}
	for _, p := range fairPeers {
		b.Run("HotLock/"+p.name, func(b *testing.B) { benchmarkHotLock(b, node, p) })
	}
}

// rlockFairLocker takes FairMutex locks.
type rlockFairLocker struct{ rlockLocker }

func openRlockFair(b *testing.B, addr string, lease time.Duration) locker {
	return rlockFairLocker{openRlock(b, addr, lease).(rlockLocker)}
}

func (l rlockFairLocker) lock(ctx context.Context, name string) (func() error, error) {
	mu := l.c.FairMutex(name)
	lctx, err := mu.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return lostIf(mu.Unlock(lctx), rlock.ErrNotHeld) }, nil
}
