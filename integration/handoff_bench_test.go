package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// waiterSettle is how long a waiter is given to start waiting before the
// holder unlocks, so that every handoff measured is one to a blocked waiter.
const waiterSettle = 30 * time.Millisecond

// handoffTimeout bounds one handoff: a waiter that has not taken the lock
// this long after it was freed has missed its wake-up. With one waiter the
// handoff counts as stalled, and as taking this long; a relay fails.
const handoffTimeout = 5 * time.Second

// relayHold is how long each owner in a relay holds the lock: long enough
// for the owner before it to be blocked again, so that every Unlock finds
// all the other owners waiting.
const relayHold = 2 * time.Millisecond

// benchHandoff measures, for rlock and each peer, how long a lock takes to
// pass to a waiting owner: from the holder's Unlock to the next holder's
// Lock returning, as p50 and p99. Redis sets the floor at a round trip
// made after as long an idle (Floor/roundtrip-idle=...).
//
//   - waiters=1: a holder in one Client and a waiter in another, the waiter
//     started afresh and given waiterSettle to block before every handoff.
//     A waiter that misses its wake-up is counted as a stall.
//   - waiters=8: a relay of nine owners, one in one Client and eight in
//     another, each taking the lock, holding it for relayHold and passing
//     it on, so that every Unlock finds eight owners waiting. Every handoff
//     is measured, and so is what a handoff costs: Redis commands (INFO
//     commandstats, which counts the commands scripts run too), script
//     calls, and CPU in this process and in Redis.
//   - clients=9: the same relay with every owner in a Client of its own,
//     so that every Unlock finds eight waiters in eight other Clients, as
//     eight processes would: how many of them a release sets to work.
func benchHandoff(b *testing.B, node *redistest.Node) {
	for _, p := range peers {
		b.Run("waiters=1/"+p.name, func(b *testing.B) {
			holder, waiter := p.open(b, node.Addr(), 0), p.open(b, node.Addr(), 0)
			ctx, name := benchContext(b), benchName(b)
			latencies := make([]time.Duration, 0, 1024)
			stalls := 0
			for b.Loop() {
				took, stalled := handoff(ctx, b, holder, waiter, name)
				latencies = append(latencies, took)
				if stalled {
					stalls++
				}
			}
			reportLatencies(b, latencies)
			b.ReportMetric(float64(stalls), "stalls")
		})
	}
	for _, p := range peers {
		b.Run("waiters=8/"+p.name, func(b *testing.B) {
			benchmarkRelay(b, node, p, 8, 2)
		})
	}
	for _, p := range peers {
		b.Run("clients=9/"+p.name, func(b *testing.B) {
			benchmarkRelay(b, node, p, 8, 9)
		})
	}
}

// handoff has holder take the lock, lets waiter block on it, and returns
// how long after the holder's Unlock began the waiter held it, or
// handoffTimeout and true when the waiter stalled.
func handoff(ctx context.Context, b *testing.B, holder, waiter locker, name string) (time.Duration, bool) {
	unlock, err := holder.lock(ctx, name)
	require.NoError(b, err)
	wctx, cancel := context.WithTimeout(ctx, waiterSettle+handoffTimeout)
	defer cancel()
	acquired := make(chan time.Time, 1)
	released := make(chan error, 1)
	go func() {
		unlockWaiter, err := waiter.lock(wctx, name)
		acquired <- time.Now()
		if err == nil {
			err = unlockWaiter()
		}
		released <- err
	}()
	time.Sleep(waiterSettle) // benchmark pacing: the peers' waiters (some poll) show no common state to wait on
	start := time.Now()
	require.NoError(b, unlock())
	took := (<-acquired).Sub(start)
	err = <-released
	if wctx.Err() != nil && ctx.Err() == nil {
		return handoffTimeout, true
	}
	require.NoError(b, err)
	return took, false
}

// benchmarkRelay runs a relay of waiters+1 owners of p's lockers on node,
// spread over clients Clients: owner i in Client min(i, clients-1), so
// with 2 the first in one Client and the rest in another. An owner that passed the
// lock on waits for the next owner to take it before it asks again, so it
// never takes the lock back from itself. Each iteration is one handoff.
func benchmarkRelay(b *testing.B, node *redistest.Node, p peer, waiters, clients int) {
	lockers := make([]locker, clients)
	for i := range lockers {
		lockers[i] = p.open(b, node.Addr(), 0)
	}
	r := &relay{name: benchName(b), passed: make(chan struct{}), handoffs: make(chan time.Duration)}
	ctx, cancel := context.WithCancel(benchContext(b))
	var wg sync.WaitGroup
	errs := make([]error, waiters+1)
	for i := range errs {
		l := lockers[min(i, clients-1)]
		wg.Go(func() {
			if errs[i] = r.run(ctx, l); errs[i] != nil {
				cancel() // the relay is broken: stop the benchmark
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
		require.NoError(b, errors.Join(errs...))
	}()
	stalled := time.NewTimer(handoffTimeout)
	defer stalled.Stop()
	next := func() time.Duration {
		stalled.Reset(handoffTimeout)
		select {
		case d := <-r.handoffs:
			return d
		case <-stalled.C:
			b.Fatalf("no handoff in %v: every waiter missed its wake-up", handoffTimeout)
		case <-ctx.Done():
			b.Fatal("the relay stopped; the owners' errors follow")
		}
		return 0
	}

	// Let every owner join the relay before measuring.
	for range 2 * (waiters + 1) {
		next()
	}
	c := startCost(b, node.Client(b))
	latencies := make([]time.Duration, 0, 1024)
	for b.Loop() {
		latencies = append(latencies, next())
	}
	c.report(len(latencies), "handoff")
	reportLatencies(b, latencies)
}

// relay is the state the owners of a relay share.
type relay struct {
	name     string
	handoffs chan time.Duration // each handoff's latency, to the benchmark

	mu       sync.Mutex
	released time.Time     // when the latest Unlock began; zero before the first
	passed   chan struct{} // closed when the lock is next taken
}

// run is one owner of the relay, taking and passing on the lock through l
// until ctx is done.
func (r *relay) run(ctx context.Context, l locker) error {
	for {
		unlock, err := l.lock(ctx, r.name)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		took, handedOff, passed := r.took(time.Now())
		if handedOff {
			select {
			case r.handoffs <- took:
			case <-ctx.Done():
			}
		}
		time.Sleep(relayHold) // benchmark pacing: the hold, during which the others block again
		r.mu.Lock()
		r.released = time.Now()
		r.mu.Unlock()
		// Once ctx is done, a library may report the lock as lost.
		if err := unlock(); err != nil && ctx.Err() == nil {
			return fmt.Errorf("unlock: %w", err)
		}
		select {
		case <-passed:
		case <-ctx.Done():
			return nil
		}
	}
}

// took records that the lock was taken at now. It returns how long after
// the latest Unlock began that was, whether there was one (not so for the
// first take), and a channel closed when the lock is taken next.
func (r *relay) took(now time.Time) (time.Duration, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.passed)
	r.passed = make(chan struct{})
	return now.Sub(r.released), !r.released.IsZero(), r.passed
}

// reportLatencies reports the p50 and p99 of latencies in microseconds.
func reportLatencies(b *testing.B, latencies []time.Duration) {
	slices.Sort(latencies)
	b.ReportMetric(micros(percentile(latencies, 50)), "p50-µs")
	b.ReportMetric(micros(percentile(latencies, 99)), "p99-µs")
}

// micros is d in microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
