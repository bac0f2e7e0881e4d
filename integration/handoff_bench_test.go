package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// waiterSettle is how long a waiter is given to start waiting before the
// holder unlocks, so that every handoff measured is one to a blocked waiter.
const waiterSettle = 30 * time.Millisecond

// BenchmarkHandoff measures, for rlock and each peer against one Redis, the
// time from the holder's Unlock to the waiter in another connection holding
// the lock, and reports its p50 and p99.
//
//	go test ./integration -run '^$' -bench Handoff -benchtime 200x
func BenchmarkHandoff(b *testing.B) {
	node := redistest.Shared(b)
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			holder, waiter := p.open(b, node.Addr()), p.open(b, node.Addr())
			name := fmt.Sprintf("bench:handoff:%s:%d", p.name, time.Now().UnixNano())
			latencies := make([]time.Duration, 0, b.N)
			for b.Loop() {
				latencies = append(latencies, handoff(b, holder, waiter, name))
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(percentile(latencies, 50).Microseconds()), "p50-µs")
			b.ReportMetric(float64(percentile(latencies, 99).Microseconds()), "p99-µs")
		})
	}
}

// handoff has holder take the lock, lets waiter block on it, and returns
// how long after the holder's Unlock began the waiter held it.
func handoff(b *testing.B, holder, waiter locker, name string) time.Duration {
	ctx := b.Context()
	unlock, err := holder.lock(ctx, name)
	require.NoError(b, err)
	acquired := make(chan time.Time, 1)
	released := make(chan error, 1)
	go func() {
		unlockWaiter, err := waiter.lock(ctx, name)
		acquired <- time.Now()
		if err == nil {
			err = unlockWaiter()
		}
		released <- err
	}()
	time.Sleep(waiterSettle)
	start := time.Now()
	require.NoError(b, unlock())
	took := (<-acquired).Sub(start)
	require.NoError(b, <-released)
	return took
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
