package integration

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

const (
	// millionCycles is how many Lock+Unlock cycles BenchmarkMillionCycles runs.
	millionCycles = 1_000_000
	// millionTimeout bounds its run: a minute or so on two cores.
	millionTimeout = 10 * time.Minute
	// usageEvery is how often Redis's usage is sampled during the run.
	usageEvery = 100 * time.Millisecond
)

// BenchmarkMillionCycles checks that rlock writes nothing to Redis per
// request that outlives it: 1 000 000 Lock+Unlock cycles at full speed, in
// the Parallel scenario's loop (64 goroutines, each on a lock of its own,
// the same 64 names throughout), with Redis's key count and used_memory
// read before, every 100 ms during (the peak is reported) and after. Once
// the locks are released the key count must be back to the baseline plus
// at most one key per lock name, the fencing counter, which stays by
// design, and used_memory within 1 MB (10^6 bytes) of the baseline.
//
// It is not part of BenchmarkCompare: it takes about a minute, and runs
// only when asked to:
//
//	RLOCK_MILLION=1 go test ./integration -run '^$' -bench MillionCycles -benchtime 1x -count 1
func BenchmarkMillionCycles(b *testing.B) {
	if os.Getenv("RLOCK_MILLION") != "1" {
		b.Skip("1 000 000 Lock+Unlock cycles take about a minute; set RLOCK_MILLION=1 to run them")
	}
	node := benchNode(b)
	rc := node.Client(b)
	l := openRlock(b, node.Addr(), 0)
	ctx, cancel := context.WithTimeout(b.Context(), millionTimeout)
	defer cancel()
	names := lockNames(benchName(b), concurrency)
	op := ownLocks(ctx, l, names)
	for b.Loop() {
		before, err := redistest.ReadUsage(ctx, rc)
		require.NoError(b, err)
		start := time.Now()
		peak, n, err := sampleUsage(ctx, rc, func() error {
			return parallel(millionCycles, concurrency, func(worker, _ int) error { return op(worker) })
		})
		took := time.Since(start)
		require.NoError(b, err, "%d cycles", millionCycles)
		after, err := redistest.ReadUsage(ctx, rc)
		require.NoError(b, err)
		for _, u := range []redistest.Usage{before, after} {
			peak.UsedMemory, peak.Keys = max(peak.UsedMemory, u.UsedMemory), max(peak.Keys, u.Keys)
		}

		b.ReportMetric(float64(millionCycles)/took.Seconds(), "cycles/s")
		b.ReportMetric(float64(before.Keys), "keys-before")
		b.ReportMetric(float64(peak.Keys), "keys-peak")
		b.ReportMetric(float64(after.Keys), "keys-after")
		b.ReportMetric(float64(before.UsedMemory)/megabyte, "MB-before")
		b.ReportMetric(float64(peak.UsedMemory)/megabyte, "MB-peak")
		b.ReportMetric(float64(after.UsedMemory)/megabyte, "MB-after")
		// Before the checks, which end the benchmark without its metrics.
		b.Logf("%d cycles in %v; keys %d before, %d at peak, %d after; used_memory %d B before, %d B at peak, %d B after; %d samples",
			millionCycles, took.Round(time.Millisecond), before.Keys, peak.Keys, after.Keys,
			before.UsedMemory, peak.UsedMemory, after.UsedMemory, n)

		require.LessOrEqual(b, after.Keys, before.Keys+int64(len(names)),
			"keys after %d cycles on %d locks: the baseline %d and at most one fencing counter per lock",
			millionCycles, len(names), before.Keys)
		require.LessOrEqual(b, after.UsedMemory-before.UsedMemory, int64(megabyte),
			"used_memory after %d cycles, locks released: within 1 MB of the baseline %d B", millionCycles, before.UsedMemory)
	}
}

// sampleUsage runs run while reading rc's server's usage every usageEvery,
// and returns the most memory and keys seen (each at its own peak), how
// many samples were taken, and run's error or the first sample's.
func sampleUsage(ctx context.Context, rc rueidis.Client, run func() error) (peak redistest.Usage, samples int, err error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var sampleErr error
	go func() {
		defer close(done)
		tick := time.NewTicker(usageEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			u, err := redistest.ReadUsage(ctx, rc)
			if err != nil {
				if ctx.Err() == nil {
					sampleErr = err
				}
				return
			}
			samples++
			peak.UsedMemory, peak.Keys = max(peak.UsedMemory, u.UsedMemory), max(peak.Keys, u.Keys)
			peak.Volatile = max(peak.Volatile, u.Volatile)
		}
	}()
	err = run()
	cancel()
	<-done
	return peak, samples, errors.Join(err, sampleErr)
}
