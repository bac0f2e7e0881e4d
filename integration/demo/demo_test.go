package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rlock/rlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestDemo runs the demo end to end on a Redis of its own.
func TestDemo(t *testing.T) {
	require.NoError(t, run(2, 2, 3))
}

// TestCheckExclusive proves the demo's final check catches what it claims
// to: a repeated token and two overlapping holds.
func TestCheckExclusive(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	ok := []section{{"a", 1, at(0), at(10)}, {"b", 2, at(11), at(20)}}
	assert.NoError(t, checkExclusive(ok))

	overlap := []section{{"a", 1, at(0), at(10)}, {"b", 2, at(5), at(20)}}
	assert.ErrorContains(t, checkExclusive(overlap), "two holders at once")

	repeated := []section{{"a", 1, at(0), at(10)}, {"b", 1, at(11), at(20)}}
	assert.ErrorContains(t, checkExclusive(repeated), "granted twice")
}

// TestQuantile checks the summary's estimate from histogram buckets.
func TestQuantile(t *testing.T) {
	p := metricdata.HistogramDataPoint[float64]{
		Count: 10, Bounds: []float64{1, 2, 4}, BucketCounts: []uint64{0, 8, 0, 2},
		Min: metricdata.NewExtrema(1.2), Max: metricdata.NewExtrema(9.0),
	}
	assert.InDelta(t, 1700*time.Millisecond, quantile(p, 0.5), float64(time.Microsecond), "rank 5 of 8 in (1.2, 2]")
	assert.InDelta(t, 9*time.Second, quantile(p, 1), float64(time.Microsecond), "the last bucket ends at the max")
	assert.Zero(t, quantile(metricdata.HistogramDataPoint[float64]{}, 0.5), "no data")
}
