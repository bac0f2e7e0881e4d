package rlockotel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/rlockotel"
)

// telemetry is an OTel SDK that keeps what it is given: spans in memory,
// metrics for a manual reader.
type telemetry struct {
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
}

func newTelemetry(t *testing.T) *telemetry {
	tel := &telemetry{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		require.NoError(t, tel.tp.Shutdown(context.Background()))
		require.NoError(t, tel.mp.Shutdown(context.Background()))
	})
	return tel
}

// byPrefix is the lock-name normaliser of the tests: "orders:42" is
// "orders".
func byPrefix(name string) string {
	prefix, _, _ := strings.Cut(name, ":")
	return prefix
}

// locks returns an rlock Client on the shared Redis that reports to tel
// through the adapter, made with more options, if any.
func (tel *telemetry) locks(t *testing.T, more []rlockotel.Option, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	hooks, err := rlockotel.New(append([]rlockotel.Option{rlockotel.WithTracerProvider(tel.tp), rlockotel.WithMeterProvider(tel.mp)}, more...)...)
	require.NoError(t, err)
	c, err := rlock.New(redistest.Shared(t).Client(t), append(opts, rlock.WithHooks(hooks))...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// named is the adapter option of the tests that record lock names.
var named = []rlockotel.Option{rlockotel.WithLockName(byPrefix)}

// spans returns the ended spans called name.
func (tel *telemetry) spansNamed(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range tel.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// metric returns the metric called name, collected now, and whether there
// is one.
func (tel *telemetry) metric(t *testing.T, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(t.Context(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// waitSum waits until the sum name, over every attribute set, is want. It
// reads on t's goroutine, where sum may fail t.
func (tel *telemetry) waitSum(t *testing.T, name string, want int64) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%s at %d", name, want), func(context.Context) error {
		return redistest.Exactly(name, tel.sum(t, name), want)
	})
}

// sum adds up the points of the counter or up-down counter name that carry
// every one of attrs.
func (tel *telemetry) sum(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := tel.metric(t, name)
	if !ok {
		return 0
	}
	data, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	var n int64
	for _, p := range data.DataPoints {
		if carries(p.Attributes, attrs) {
			n += p.Value
		}
	}
	return n
}

// histogram returns the count and sum of the points of histogram name that
// carry every one of attrs.
func (tel *telemetry) histogram(t *testing.T, name string, attrs ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	m, ok := tel.metric(t, name)
	if !ok {
		return 0, 0
	}
	data, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	assert.Equal(t, "s", m.Unit)
	var n uint64
	var sum float64
	for _, p := range data.DataPoints {
		if carries(p.Attributes, attrs) {
			n += p.Count
			sum += p.Sum
		}
	}
	return n, sum
}

func carries(set attribute.Set, attrs []attribute.KeyValue) bool {
	for _, a := range attrs {
		if v, ok := set.Value(a.Key); !ok || v != a.Value {
			return false
		}
	}
	return true
}

// lookup returns span s's attribute key, and whether it has one.
func lookup(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func attr(s tracetest.SpanStub, key string) attribute.Value {
	v, _ := lookup(s, key)
	return v
}

func hasAttr(s tracetest.SpanStub, key string) bool {
	_, ok := lookup(s, key)
	return ok
}

func outcome(o rlock.Outcome) attribute.KeyValue {
	return attribute.String("rlock.outcome", string(o))
}

var mutexKind = attribute.String("rlock.kind", "mutex")

func TestSpansJoinTheCallersTrace(t *testing.T) {
	tel := newTelemetry(t)
	mu := tel.locks(t, named).Mutex("orders:" + redistest.LockName(t))

	ctx, job := tel.tp.Tracer("test").Start(t.Context(), "job")
	ctx, err := mu.Lock(ctx)
	require.NoError(t, err)
	ctx, err = mu.Lock(ctx)
	require.NoError(t, err)
	token, ok := mu.FencingToken(ctx)
	require.True(t, ok)
	require.NoError(t, mu.Unlock(ctx))
	require.NoError(t, mu.Unlock(ctx))
	job.End()

	acquires, releases := tel.spansNamed("rlock.acquire"), tel.spansNamed("rlock.release")
	require.Len(t, acquires, 2, "one span per Lock")
	require.Len(t, releases, 2, "one span per Unlock")
	for _, s := range append(acquires, releases...) {
		assert.Equal(t, job.SpanContext().TraceID(), s.SpanContext.TraceID(), "%s: in the caller's trace", s.Name)
		assert.Equal(t, job.SpanContext().SpanID(), s.Parent.SpanID(), "%s: a child of the caller's span", s.Name)
		assert.Equal(t, "mutex", attr(s, "rlock.kind").AsString())
		assert.Equal(t, "orders", attr(s, "rlock.name").AsString(), "the name as the normaliser gave it")
		assert.Equal(t, token, attr(s, "rlock.fencing_token").AsInt64())
		assert.Equal(t, codes.Unset, s.Status.Code)
	}
	first, again := acquires[0], acquires[1]
	assert.Equal(t, "acquired", attr(first, "rlock.outcome").AsString())
	assert.Equal(t, int64(1), attr(first, "rlock.attempts").AsInt64())
	assert.False(t, attr(first, "rlock.reentry").AsBool())
	assert.True(t, attr(again, "rlock.reentry").AsBool())
	assert.Equal(t, int64(2), attr(again, "rlock.hold_count").AsInt64())
	assert.Equal(t, "still_held", attr(releases[0], "rlock.outcome").AsString())
	assert.Equal(t, "freed", attr(releases[1], "rlock.outcome").AsString())

	n, _ := tel.histogram(t, "rlock.acquire.duration", mutexKind, attribute.String("rlock.name", "orders"), outcome(rlock.OutcomeAcquired))
	assert.Equal(t, uint64(2), n)
	n, _ = tel.histogram(t, "rlock.release.duration", outcome(rlock.OutcomeFreed))
	assert.Equal(t, uint64(1), n)
	n, held := tel.histogram(t, "rlock.hold.duration", attribute.String("rlock.reason", "released"))
	assert.Equal(t, uint64(1), n, "one hold")
	assert.Positive(t, held)
	assert.Zero(t, tel.sum(t, "rlock.held"), "nothing held any more")
	assert.Zero(t, tel.sum(t, "rlock.lost"))
}

// TestAcquiresThatWaitTimeOutAndAreCancelled reads the waiting count while a
// call waits, and the outcomes after.
func TestAcquiresThatWaitTimeOutAndAreCancelled(t *testing.T) {
	tel := newTelemetry(t)
	mu := tel.locks(t, named).Mutex("jobs:" + redistest.LockName(t))
	held, err := mu.Lock(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(1), tel.sum(t, "rlock.held", mutexKind, attribute.String("rlock.name", "jobs")))

	got := make(chan error, 1)
	go func() {
		ctx, err := mu.Lock(t.Context())
		if err == nil {
			err = mu.Unlock(ctx)
		}
		got <- err
	}()
	tel.waitSum(t, "rlock.waiting", 1) // the waiter is counted
	require.NoError(t, mu.Unlock(held))
	require.NoError(t, <-got)
	assert.Zero(t, tel.sum(t, "rlock.waiting"), "the waiter is no longer counted")

	tctx, ok, err := mu.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "free again")
	require.NoError(t, mu.Unlock(tctx))
	held, err = mu.Lock(t.Context())
	require.NoError(t, err)
	_, ok, err = mu.TryLock(t.Context(), 50*time.Millisecond, 0)
	require.NoError(t, err)
	require.False(t, ok)
	cctx, cancel := context.WithCancel(t.Context())
	go func() {
		_, err := mu.Lock(cctx)
		got <- err
	}()
	tel.waitSum(t, "rlock.waiting", 1) // cancelled once it waits
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)
	require.NoError(t, mu.Unlock(held))

	n, _ := tel.histogram(t, "rlock.acquire.duration", outcome(rlock.OutcomeAcquired))
	assert.Equal(t, uint64(4), n, "the holder twice, the waiter, the TryLock")
	n, waited := tel.histogram(t, "rlock.acquire.wait", outcome(rlock.OutcomeAcquired))
	assert.Equal(t, uint64(4), n, "every acquire has a wait, 0 when it did not wait")
	assert.Positive(t, waited, "the waiter waited")
	n, _ = tel.histogram(t, "rlock.acquire.duration", outcome(rlock.OutcomeTimeout))
	assert.Equal(t, uint64(1), n)
	n, waited = tel.histogram(t, "rlock.acquire.wait", outcome(rlock.OutcomeTimeout))
	assert.Equal(t, uint64(1), n)
	assert.GreaterOrEqual(t, waited, 0.04, "the TryLock waited its 50ms")
	n, _ = tel.histogram(t, "rlock.acquire.duration", outcome(rlock.OutcomeCanceled))
	assert.Equal(t, uint64(1), n)
	assert.Zero(t, tel.sum(t, "rlock.waiting"))
	assert.Zero(t, tel.sum(t, "rlock.held"))

	spans := tel.spansNamed("rlock.acquire")
	require.Len(t, spans, 6)
	byOutcome := map[string]tracetest.SpanStub{}
	waits := 0
	for _, s := range spans {
		byOutcome[attr(s, "rlock.outcome").AsString()] = s
		for _, e := range s.Events {
			if e.Name == "rlock.wait" {
				waits++
			}
		}
	}
	assert.Equal(t, 3, waits, "the waiter, the TryLock and the cancelled Lock waited")
	assert.Equal(t, codes.Unset, byOutcome["timeout"].Status.Code, "a TryLock that runs out is no error")
	assert.Equal(t, codes.Error, byOutcome["canceled"].Status.Code)
	assert.Zero(t, attr(byOutcome["timeout"], "rlock.fencing_token").AsInt64(), "no token without the lock")
}

func TestLostHoldsAndRenewals(t *testing.T) {
	tel := newTelemetry(t)
	c := tel.locks(t, nil, rlock.WithLeaseTime(600*time.Millisecond))
	raw := redistest.Shared(t).Client(t)
	mu := c.Mutex(redistest.LockName(t))

	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	redistest.Eventually(t, "the watchdog renews the hold", func(context.Context) error {
		if tel.sum(t, "rlock.renewals", attribute.String("rlock.result", "renewed")) == 0 {
			return errors.New("no renewal counted")
		}
		return nil
	})
	assert.Positive(t, tel.sum(t, "rlock.renewal.calls"))

	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(keys.New(rlock.DefaultKeyPrefix, mu.Name()).Hash).Build()).Error())
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	tel.waitSum(t, "rlock.lost", 1)
	assert.Equal(t, int64(1), tel.sum(t, "rlock.lost", mutexKind, attribute.String("rlock.reason", "gone")))
	assert.Equal(t, int64(1), tel.sum(t, "rlock.renewals", attribute.String("rlock.result", "lost")))
	n, _ := tel.histogram(t, "rlock.hold.duration", attribute.String("rlock.reason", "gone"))
	assert.Equal(t, uint64(1), n)
	assert.Zero(t, tel.sum(t, "rlock.held"))

	// A fixed lease that runs out.
	ctx, err = mu.LockFor(t.Context(), 50*time.Millisecond)
	require.NoError(t, err)
	<-ctx.Done()
	tel.waitSum(t, "rlock.lost", 2)
	assert.Equal(t, int64(1), tel.sum(t, "rlock.lost", attribute.String("rlock.reason", "lease_ended")))

	// No name without a normaliser.
	for _, s := range tel.spans.GetSpans() {
		assert.False(t, hasAttr(s, "rlock.name"), "%s carries no rlock.name", s.Name)
	}
	m, ok := tel.metric(t, "rlock.lost")
	require.True(t, ok)
	for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
		_, has := p.Attributes.Value("rlock.name")
		assert.False(t, has, "no rlock.name on metrics")
	}
}

// TestGuardedWrites: a Do that ran and one refused because the lock was
// lost each end a span of their own, in the caller's trace, and count in
// rlock.do.duration by outcome.
func TestGuardedWrites(t *testing.T) {
	tel := newTelemetry(t)
	name := "orders:" + redistest.LockName(t)
	c := tel.locks(t, named)
	mu := c.Mutex(name)
	raw := redistest.Shared(t).Client(t)

	ctx, job := tel.tp.Tracer("test").Start(t.Context(), "job")
	lctx, err := mu.Lock(ctx)
	require.NoError(t, err)
	token, ok := mu.FencingToken(lctx)
	require.True(t, ok)
	_, err = mu.Do(lctx, raw.B().Set().Key(mu.Key("total")).Value("1").Build(), raw.B().Get().Key(mu.Key("total")).Build())
	require.NoError(t, err)
	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(keys.New(rlock.DefaultKeyPrefix, name).Hash).Build()).Error())
	_, err = mu.Do(lctx, raw.B().Set().Key(mu.Key("total")).Value("2").Build())
	require.ErrorIs(t, err, rlock.ErrLockLost, "the lock was deleted under its holder")
	assert.ErrorIs(t, mu.Unlock(lctx), rlock.ErrNotHeld)
	job.End()

	dos := tel.spansNamed("rlock.do")
	require.Len(t, dos, 2, "one span per Do")
	for _, s := range dos {
		assert.Equal(t, job.SpanContext().SpanID(), s.Parent.SpanID(), "a child of the caller's span")
		assert.Equal(t, "orders", attr(s, "rlock.name").AsString())
		assert.Equal(t, token, attr(s, "rlock.fencing_token").AsInt64())
	}
	assert.Equal(t, "ran", attr(dos[0], "rlock.outcome").AsString())
	assert.Equal(t, int64(2), attr(dos[0], "rlock.commands").AsInt64())
	assert.Equal(t, codes.Unset, dos[0].Status.Code)
	assert.Equal(t, "lost", attr(dos[1], "rlock.outcome").AsString())
	assert.Equal(t, codes.Error, dos[1].Status.Code)
	n, _ := tel.histogram(t, "rlock.do.duration", outcome(rlock.OutcomeRan))
	assert.Equal(t, uint64(1), n)
	n, _ = tel.histogram(t, "rlock.do.duration", outcome(rlock.OutcomeLost))
	assert.Equal(t, uint64(1), n)
}
