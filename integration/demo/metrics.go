package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/rlockotel"
)

// metrics collects what the demo's locks report through rlockotel, for a
// manual reader to read at the end.
type metrics struct {
	reader   *sdkmetric.ManualReader
	provider *sdkmetric.MeterProvider
	hooks    *rlockotel.Hooks
}

func newMetrics() (*metrics, error) {
	m := &metrics{reader: sdkmetric.NewManualReader()}
	m.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(m.reader))
	hooks, err := rlockotel.New(rlockotel.WithMeterProvider(m.provider))
	if err != nil {
		return nil, err
	}
	m.hooks = hooks
	return m, nil
}

// summary is what the demo prints from the metrics.
type summary struct {
	acquisitions uint64
	p50, p99     time.Duration // wait of the acquisitions
	lost         int64
}

func (s summary) String() string {
	return fmt.Sprintf("metrics: %d acquisitions, wait p50 %v p99 %v, %d holds lost",
		s.acquisitions, s.p50.Round(time.Millisecond), s.p99.Round(time.Millisecond), s.lost)
}

// summarise reads the metrics collected so far.
func (m *metrics) summarise(ctx context.Context) (summary, error) {
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(ctx, &rm); err != nil {
		return summary{}, err
	}
	var s summary
	acquired := attribute.String("rlock.outcome", string(rlock.OutcomeAcquired))
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			switch data := metric.Data.(type) {
			case metricdata.Histogram[float64]:
				if metric.Name != "rlock.acquire.wait" {
					continue
				}
				for _, p := range data.DataPoints {
					if v, ok := p.Attributes.Value(acquired.Key); ok && v == acquired.Value {
						s.acquisitions = p.Count
						s.p50, s.p99 = quantile(p, 0.5), quantile(p, 0.99)
					}
				}
			case metricdata.Sum[int64]:
				if metric.Name != "rlock.lost" {
					continue
				}
				for _, p := range data.DataPoints {
					s.lost += p.Value
				}
			}
		}
	}
	return s, nil
}

// quantile estimates the q-quantile of histogram point p (in seconds):
// linear within the bucket where it falls, kept within the point's min and
// max.
func quantile(p metricdata.HistogramDataPoint[float64], q float64) time.Duration {
	if p.Count == 0 {
		return 0
	}
	lo, lok := p.Min.Value()
	hi, hok := p.Max.Value()
	rank := q * float64(p.Count)
	var seen float64
	for i, n := range p.BucketCounts {
		if n == 0 || seen+float64(n) < rank {
			seen += float64(n)
			continue
		}
		lower, upper := lo, hi
		if i > 0 && (!lok || p.Bounds[i-1] > lower) {
			lower = p.Bounds[i-1]
		}
		if i < len(p.Bounds) && (!hok || p.Bounds[i] < upper) {
			upper = p.Bounds[i]
		}
		v := lower + (upper-lower)*(rank-seen)/float64(n)
		return time.Duration(v * float64(time.Second))
	}
	return time.Duration(hi * float64(time.Second))
}
