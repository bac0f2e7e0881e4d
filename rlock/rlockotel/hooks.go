package rlockotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/rlock/rlock/rlock"
)

// AcquireStart starts the rlock.acquire span.
func (h *Hooks) AcquireStart(ctx context.Context, l rlock.LockRef) context.Context {
	return h.start(ctx, "rlock.acquire", l)
}

// AcquireWait marks the span and counts the call as waiting.
func (h *Hooks) AcquireWait(ctx context.Context, l rlock.LockRef) {
	trace.SpanFromContext(ctx).AddEvent("rlock.wait")
	h.waiting.Add(ctx, 1, h.set(l, "", "").add...)
}

// AcquireEnd ends the span and records the call's durations.
func (h *Hooks) AcquireEnd(ctx context.Context, e rlock.AcquireEnd) {
	if e.Waited {
		h.waiting.Add(ctx, -1, h.set(e.LockRef, "", "").add...)
	}
	by := h.set(e.LockRef, outcomeKey, string(e.Outcome))
	h.acquireDuration.Record(ctx, e.Duration.Seconds(), by.rec...)
	h.acquireWait.Record(ctx, e.Wait.Seconds(), by.rec...)

	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			outcomeKey.String(string(e.Outcome)),
			attemptsKey.Int(e.Attempts),
			wakeupsKey.Int(e.Wakeups),
			waitKey.Float64(millis(e.Wait)),
			{}, {}, {}, // room for a grant's
		}[:4]
		if e.Outcome == rlock.OutcomeAcquired {
			attrs = append(attrs, reentryKey.Bool(e.Reentry), countKey.Int(e.Count), tokenKey.Int64(e.Token))
		}
		span.SetAttributes(attrs...)
	}
	end(span, e.Err)
}

// ReleaseStart starts the rlock.release span.
func (h *Hooks) ReleaseStart(ctx context.Context, l rlock.LockRef) context.Context {
	return h.start(ctx, "rlock.release", l)
}

// ReleaseEnd ends the span and records the call's duration.
func (h *Hooks) ReleaseEnd(ctx context.Context, e rlock.ReleaseEnd) {
	h.endCall(ctx, h.releaseDuration, e.LockRef, e.Outcome, countKey.Int(e.Left), e.Token, e.Duration, e.Err)
}

// endCall records a call's duration in hist by outcome, and ends its span
// with the outcome, what, and the fencing token, if any.
func (h *Hooks) endCall(ctx context.Context, hist metric.Float64Histogram, l rlock.LockRef, outcome rlock.Outcome, what attribute.KeyValue, token int64, d time.Duration, err error) {
	hist.Record(ctx, d.Seconds(), h.set(l, outcomeKey, string(outcome)).rec...)
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{outcomeKey.String(string(outcome)), what, {}}[:2]
		if token != 0 {
			attrs = append(attrs, tokenKey.Int64(token))
		}
		span.SetAttributes(attrs...)
	}
	end(span, err)
}

// DoStart starts the span of a guarded write (Do).
func (h *Hooks) DoStart(ctx context.Context, l rlock.LockRef) context.Context {
	return h.start(ctx, "rlock.do", l)
}

// DoEnd ends the span and records the call's duration by outcome: "ran",
// or "lost" and "not_held" for a write refused because the caller did not
// hold the lock in Redis.
func (h *Hooks) DoEnd(ctx context.Context, e rlock.DoEnd) {
	h.endCall(ctx, h.doDuration, e.LockRef, e.Outcome, commandsKey.Int(e.Commands), e.Token, e.Duration, e.Err)
}

// HoldStart counts the hold as held.
func (h *Hooks) HoldStart(e rlock.HoldStart) {
	h.held.Add(context.Background(), 1, h.set(e.LockRef, "", "").add...)
}

// HoldEnd records how long the hold lasted, and a loss.
func (h *Hooks) HoldEnd(e rlock.HoldEnd) {
	ctx := context.Background()
	h.held.Add(ctx, -1, h.set(e.LockRef, "", "").add...)
	by := h.set(e.LockRef, reasonKey, string(e.Reason))
	h.holdDuration.Record(ctx, e.Held.Seconds(), by.rec...)
	if e.Reason != rlock.EndReleased {
		h.lost.Add(ctx, 1, by.add...)
	}
}

// The renewal results.
var (
	renewed     = newMeasure(resultKey.String("renewed"))
	renewalLost = newMeasure(resultKey.String("lost"))
	failed      = newMeasure(resultKey.String("failed"))
)

// RenewalRound counts the round's renewals and calls.
func (h *Hooks) RenewalRound(e rlock.RenewalRound) {
	ctx := context.Background()
	for _, r := range [...]struct {
		n  int
		by measure
	}{{e.Renewed, renewed}, {e.Lost, renewalLost}, {e.Failed, failed}} {
		if r.n > 0 {
			h.renewals.Add(ctx, int64(r.n), r.by.add...)
		}
	}
	h.renewalCalls.Add(ctx, int64(e.Calls))
	h.renewalDuration.Record(ctx, e.Duration.Seconds())
}

// ReplicaAck records the acquire and WAIT round trip.
func (h *Hooks) ReplicaAck(ctx context.Context, e rlock.ReplicaAck) {
	acked := "acked"
	if e.Acked < e.Wanted {
		acked = "short"
	}
	h.replicaAck.Record(ctx, e.Duration.Seconds(), h.set(e.LockRef, resultKey, acked).rec...)
}

// start starts span name for lock l, a child of ctx's span.
func (h *Hooks) start(ctx context.Context, name string, l rlock.LockRef) context.Context {
	ctx, _ = h.tracer.Start(ctx, name, h.set(l, "", "").span...)
	return ctx
}

// end ends span, with status Error when the call failed with err.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func millis(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
