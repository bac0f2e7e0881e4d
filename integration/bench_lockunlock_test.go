package integration

import (
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redistest"
)

// benchLockUnlock measures an uncontended Lock followed by Unlock, from one
// goroutine, in each library. Redis sets its floor at two round trips
// (Floor/roundtrip). Beside the mean time, it reports the p50 and p99 of a
// cycle, the CPU time a cycle takes in this process and in Redis, and the
// commands Redis runs for it.
func benchLockUnlock(b *testing.B, node *redistest.Node) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			l, rc := p.open(b, node.Addr(), 0), node.Client(b)
			c := startCost(b, rc)
			ctx, name := benchContext(b), benchName(b)
			latencies := make([]time.Duration, 0, 1<<16)
			for b.Loop() {
				start := time.Now()
				if err := cycle(ctx, l, name); err != nil {
					b.Fatal(err)
				}
				latencies = append(latencies, time.Since(start))
			}
			c.report(b.N, "op")
			reportLatencies(b, latencies)
		})
	}
}

// cycles is the loop of a benchmark whose operation is one Lock+Unlock of
// an uncontended lock through l.
func cycles(b *testing.B, l locker) {
	ctx, name := benchContext(b), benchName(b)
	for b.Loop() {
		if err := cycle(ctx, l, name); err != nil {
			b.Fatal(err)
		}
	}
}
