// Package rlockotel reports what rlock's locks do as OpenTelemetry spans and
// metrics: it implements rlock.Hooks and rlock.DoHooks on go.opentelemetry.io/otel, so that
// the rlock package itself does not depend on OpenTelemetry (as rueidisotel
// does for rueidis).
//
//	hooks, err := rlockotel.New(
//		rlockotel.WithTracerProvider(tp),
//		rlockotel.WithMeterProvider(mp),
//		rlockotel.WithLockName(func(name string) string {
//			prefix, _, _ := strings.Cut(name, ":") // "orders:42" -> "orders"
//			return prefix
//		}),
//	)
//	if err != nil { ... }
//	locks, err := rlock.New(rc, rlock.WithHooks(hooks))
//
// # Spans
//
// rlock.acquire covers one Lock, LockFor or TryLock call, rlock.release one
// Unlock; both are children of the span in the caller's context. Their
// attributes: rlock.kind, rlock.name (through the normaliser only),
// rlock.outcome, and for an acquire rlock.attempts, rlock.wakeups,
// rlock.wait_ms, rlock.reentry, rlock.hold_count and rlock.fencing_token;
// for a release rlock.hold_count (the levels left) and rlock.fencing_token.
// rlock.do covers one Do (a guarded write), with rlock.outcome (ran, lost,
// not_held, …), rlock.commands and rlock.fencing_token.
// A call that returned an error has status Error. An acquire that waited
// has the event "rlock.wait" when its wait began.
//
// # Metrics
//
// Durations are histograms in seconds; every metric carries rlock.kind, and
// rlock.name when a normaliser is set and returns a non-empty name.
//
//	rlock.acquire.duration      histogram     whole acquire calls, by rlock.outcome
//	rlock.acquire.wait          histogram     time acquire calls waited, by rlock.outcome (0: no wait)
//	rlock.release.duration      histogram     Unlock calls, by rlock.outcome
//	rlock.do.duration           histogram     Do calls (guarded writes), by rlock.outcome
//	rlock.hold.duration         histogram     holds from first level to end, by rlock.reason
//	rlock.held                  up-down       holds of this process now
//	rlock.waiting               up-down       acquire calls waiting now
//	rlock.lost                  counter       holds that ended other than released, by rlock.reason
//	rlock.renewals              counter       holds renewed by the watchdog, by rlock.result (renewed, lost, failed)
//	rlock.renewal.calls         counter       renew script calls (batches)
//	rlock.renewal.duration      histogram     watchdog rounds
//	rlock.replica_ack.duration  histogram     acquire and WAIT round trips, by rlock.result (acked, short)
//
// The renewal metrics carry no rlock.kind: a round renews many locks.
//
// # Lock names and cardinality
//
// Lock names are often per entity ("order:8812"): as an attribute they
// would make a series per lock. So no name is recorded unless WithLockName
// gives a normaliser that maps names to a few groups.
package rlockotel
