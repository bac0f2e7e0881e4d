package rlockotel

import (
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/rlock/rlock/rlock"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/rlock/rlock/rlock/rlockotel"

// Option configures New. It has rlock.Option's shape: an option given a
// value it cannot use makes New fail with an error that matches
// rlock.ErrInvalidArgument.
type Option func(*config) error

type config struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	name func(string) string
}

// WithTracerProvider sets where spans go. Default: otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return fmt.Errorf("%w: nil tracer provider", rlock.ErrInvalidArgument)
		}
		c.tp = tp
		return nil
	}
}

// WithMeterProvider sets where metrics go. Default: otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return fmt.Errorf("%w: nil meter provider", rlock.ErrInvalidArgument)
		}
		c.mp = mp
		return nil
	}
}

// WithLockName records rlock.name, normalise(lock name), on spans and
// metrics; an empty result records none. normalise must map the names to
// few values: each is a series of every metric. It is called concurrently.
// Default: no name is recorded.
func WithLockName(normalise func(name string) string) Option {
	return func(c *config) error {
		if normalise == nil {
			return fmt.Errorf("%w: nil lock name function", rlock.ErrInvalidArgument)
		}
		c.name = normalise
		return nil
	}
}

// Hooks turns rlock's hooks into spans and metrics. Make one with New and
// pass it to rlock.New with rlock.WithHooks. It is safe for concurrent use.
type Hooks struct {
	tracer trace.Tracer
	name   func(string) string

	acquireDuration metric.Float64Histogram
	acquireWait     metric.Float64Histogram
	releaseDuration metric.Float64Histogram
	doDuration      metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	held            metric.Int64UpDownCounter
	waiting         metric.Int64UpDownCounter
	lost            metric.Int64Counter
	renewals        metric.Int64Counter
	renewalCalls    metric.Int64Counter
	renewalDuration metric.Float64Histogram
	replicaAck      metric.Float64Histogram

	mu   sync.RWMutex
	sets map[setKey]measure // attribute sets, made once each
}

var (
	_ rlock.Hooks   = (*Hooks)(nil)
	_ rlock.DoHooks = (*Hooks)(nil)
)

// durationBounds are the histogram buckets, in seconds: from a fast local
// round trip to an hour-long hold.
var durationBounds = []float64{0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// New returns Hooks that report to the providers the options set.
func New(opts ...Option) (*Hooks, error) {
	cfg := config{}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	m := cfg.mp.Meter(ScopeName)
	h := &Hooks{tracer: cfg.tp.Tracer(ScopeName), name: cfg.name, sets: map[setKey]measure{}}
	var errs []error
	histogram := func(name, desc string) metric.Float64Histogram {
		i, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(durationBounds...))
		errs = append(errs, err)
		return i
	}
	upDown := func(name, desc string) metric.Int64UpDownCounter {
		i, err := m.Int64UpDownCounter(name, metric.WithUnit("{hold}"), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		i, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	h.acquireDuration = histogram("rlock.acquire.duration", "Duration of lock acquire calls.")
	h.acquireWait = histogram("rlock.acquire.wait", "Time lock acquire calls waited for the lock (0 when they did not wait).")
	h.releaseDuration = histogram("rlock.release.duration", "Duration of Unlock calls.")
	h.doDuration = histogram("rlock.do.duration", "Duration of guarded writes (Do calls).")
	h.holdDuration = histogram("rlock.hold.duration", "Duration of holds, from the first level to their end.")
	h.held = upDown("rlock.held", "Holds of this process.")
	h.waiting = upDown("rlock.waiting", "Acquire calls waiting for a lock.")
	h.lost = counter("rlock.lost", "{hold}", "Holds that ended other than by their release.")
	h.renewals = counter("rlock.renewals", "{hold}", "Holds the watchdog renewed, found lost, or failed to reach.")
	h.renewalCalls = counter("rlock.renewal.calls", "{call}", "Renew script calls of the watchdog.")
	h.renewalDuration = histogram("rlock.renewal.duration", "Duration of watchdog renewal rounds.")
	h.replicaAck = histogram("rlock.replica_ack.duration", "Duration of acquire calls and their replica WAIT.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return h, nil
}

// The attribute keys.
const (
	kindKey     = attribute.Key("rlock.kind")
	nameKey     = attribute.Key("rlock.name")
	outcomeKey  = attribute.Key("rlock.outcome")
	reasonKey   = attribute.Key("rlock.reason")
	resultKey   = attribute.Key("rlock.result")
	attemptsKey = attribute.Key("rlock.attempts")
	wakeupsKey  = attribute.Key("rlock.wakeups")
	waitKey     = attribute.Key("rlock.wait_ms")
	reentryKey  = attribute.Key("rlock.reentry")
	countKey    = attribute.Key("rlock.hold_count")
	tokenKey    = attribute.Key("rlock.fencing_token")
	commandsKey = attribute.Key("rlock.commands")
)

// setKey names one attribute set: a lock kind and name, and one label.
type setKey struct {
	kind, name string
	label      attribute.Key
	value      string
}

// measure is one attribute set as the options of a measurement, and of a
// span's start: made once, they cost a call no allocation of its own.
type measure struct {
	rec  []metric.RecordOption
	add  []metric.AddOption
	span []trace.SpanStartOption
}

func newMeasure(attrs ...attribute.KeyValue) measure {
	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	return measure{
		rec:  []metric.RecordOption{opt},
		add:  []metric.AddOption{opt},
		span: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)},
	}
}

// set returns the measure of the attribute set for l (its name normalised)
// and label=value (none when label is ""), making it once.
func (h *Hooks) set(l rlock.LockRef, label attribute.Key, value string) measure {
	k := setKey{kind: l.Kind, name: h.lockName(l.Name), label: label, value: value}
	h.mu.RLock()
	m, ok := h.sets[k]
	h.mu.RUnlock()
	if ok {
		return m
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	if k.kind != "" {
		attrs = append(attrs, kindKey.String(k.kind))
	}
	if k.name != "" {
		attrs = append(attrs, nameKey.String(k.name))
	}
	if label != "" {
		attrs = append(attrs, label.String(value))
	}
	m = newMeasure(attrs...)
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.sets[k]; ok {
		return prev
	}
	h.sets[k] = m
	return m
}

// lockName is the name recorded for a lock called name: "" for none.
func (h *Hooks) lockName(name string) string {
	if h.name == nil {
		return ""
	}
	return h.name(name)
}
