package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/watchdog"
)

// Hooks observes the lock engine: acquires, releases, holds, renewal rounds
// and replica acknowledgements, for every primitive built on it. Set it
// with WithHooks; package rlockotel turns it into OpenTelemetry spans and
// metrics, and keeps that dependency out of this package (as rueidishook
// does for rueidis).
//
// The methods run on the request path, on the watchdog goroutine (renewal
// rounds, holds it found gone) and on timers (deadlines): they must be safe
// for concurrent use, quick, and must not block or call back into the lock
// (nor Close its Client, which may be what runs them).
// Embed NopHooks to implement only some of them; a method added to Hooks
// later then does nothing in an implementation that embeds it.
//
// Without hooks the engine reports nothing and pays only a nil check: no
// allocation, no clock read beyond what it needs for itself.
type Hooks interface {
	// AcquireStart is called when an acquire (Lock, LockFor, TryLock)
	// begins, with the caller's context. The context it returns is given to
	// AcquireWait and AcquireEnd of the same call, and to nothing else: the
	// lock runs with the caller's context (for a span, return one carrying
	// it). A call refused before it sends anything (bad arguments, a
	// context already done, a closed Client) is not reported. A MultiLock's
	// acquire is reported by its parts' HoldStart and HoldEnd only.
	AcquireStart(ctx context.Context, l LockRef) context.Context
	// AcquireWait is called when the call begins to wait for the lock: its
	// first attempt found it held, or its Client knew it contended and it
	// did not try first.
	AcquireWait(ctx context.Context, l LockRef)
	// AcquireEnd is called once when the acquire returns.
	AcquireEnd(ctx context.Context, e AcquireEnd)
	// ReleaseStart is called when an Unlock begins; as AcquireStart, the
	// context it returns goes to the ReleaseEnd of the same call.
	ReleaseStart(ctx context.Context, l LockRef) context.Context
	// ReleaseEnd is called once when the Unlock returns.
	ReleaseEnd(ctx context.Context, e ReleaseEnd)
	// HoldStart is called when an owner's hold begins: its first level was
	// granted. A re-entry starts no hold.
	HoldStart(e HoldStart)
	// HoldEnd is called once when a hold ends: its final level released,
	// or the hold lost (Reason says how).
	HoldEnd(e HoldEnd)
	// RenewalRound is called after each watchdog round, on its goroutine.
	RenewalRound(e RenewalRound)
	// ReplicaAck is called after a granted acquire waited for replicas
	// (WithReplicaAck), with the request's context.
	ReplicaAck(ctx context.Context, e ReplicaAck)
}

// NopHooks does nothing; embed it in a Hooks to implement only some
// methods.
type NopHooks struct{}

func (NopHooks) AcquireStart(ctx context.Context, _ LockRef) context.Context { return ctx }
func (NopHooks) AcquireWait(context.Context, LockRef)                        {}
func (NopHooks) AcquireEnd(context.Context, AcquireEnd)                      {}
func (NopHooks) ReleaseStart(ctx context.Context, _ LockRef) context.Context { return ctx }
func (NopHooks) ReleaseEnd(context.Context, ReleaseEnd)                      {}
func (NopHooks) HoldStart(HoldStart)                                         {}
func (NopHooks) HoldEnd(HoldEnd)                                             {}
func (NopHooks) RenewalRound(RenewalRound)                                   {}
func (NopHooks) ReplicaAck(context.Context, ReplicaAck)                      {}

var _ Hooks = NopHooks{}

// WithHooks reports what the Client's locks do to h; see Hooks. Default:
// no hooks.
func WithHooks(h Hooks) Option {
	return func(c *config) error {
		if h == nil {
			return fmt.Errorf("%w: nil hooks", ErrInvalidArgument)
		}
		c.hooks = h
		return nil
	}
}

// LockRef names the lock an event is about: the kind of hold ("mutex", or
// another primitive's) and the lock's name as the caller gave it. Names can
// be many: aggregate them with care (rlockotel takes a normaliser).
type LockRef struct {
	Kind string
	Name string
}

// Outcome is how an acquire or a release ended.
type Outcome string

// The outcomes of an acquire.
const (
	OutcomeAcquired Outcome = "acquired"          // the call took or re-entered the lock
	OutcomeTimeout  Outcome = "timeout"           // TryLock's wait ran out: false, nil
	OutcomeCanceled Outcome = "canceled"          // the caller's context was cancelled
	OutcomeDeadline Outcome = "deadline_exceeded" // the caller's context's deadline passed
	OutcomeClosed   Outcome = "closed"            // the Client was closed
	OutcomeError    Outcome = "error"             // Redis or the arguments failed it
)

// The outcomes of a release, beside OutcomeError.
const (
	OutcomeFreed     Outcome = "freed"      // the final level: the lock is free
	OutcomeStillHeld Outcome = "still_held" // levels remain
	OutcomeNotHeld   Outcome = "not_held"   // the owner did not hold the lock
)

// AcquireEnd describes one acquire call.
type AcquireEnd struct {
	LockRef
	Outcome  Outcome
	Err      error         // the error the call returned, if any
	Duration time.Duration // the whole call
	Waited   bool          // the first attempt found it held and the call waited
	Wait     time.Duration // from the first refused attempt to the end; 0 unless Waited
	Attempts int           // acquire requests sent
	Wakeups  int           // times a waiter woke (an unlock message, the holder's lease running out)
	Reentry  bool          // acquired by an owner that already held it
	Count    int           // the owner's hold count, when acquired
	Token    int64         // the hold's fencing token, when acquired
}

// ReleaseEnd describes one Unlock call.
type ReleaseEnd struct {
	LockRef
	Outcome  Outcome
	Err      error
	Duration time.Duration
	Left     int   // levels the owner still holds
	Token    int64 // the hold's fencing token; 0 when the owner had no hold here
}

// HoldStart describes a hold that began.
type HoldStart struct {
	LockRef
	Token int64
}

// EndReason is why a hold ended.
type EndReason string

// The reasons a hold ends. Every one but EndReleased is a loss: the
// holder's lock context was ended with ErrLockLost.
const (
	EndReleased      EndReason = "released"       // the final Unlock freed it
	EndGone          EndReason = "gone"           // a renewal, release or acquire found it no longer held in Redis
	EndDeadline      EndReason = "deadline"       // the local lease deadline passed without a confirmed renewal
	EndLeaseEnded    EndReason = "lease_ended"    // a fixed lease (LockFor, TryLock with a lease) ran out
	EndClosed        EndReason = "closed"         // Client.Close
	EndForceUnlocked EndReason = "force_unlocked" // ForceUnlock through this Client
	EndQuorumLost    EndReason = "quorum_lost"    // a MultiLock part: fewer nodes than the quorum held it
	EndUnlockFailed  EndReason = "unlock_failed"  // the Unlock's request failed; the lease frees it
)

// HoldEnd describes a hold that ended.
type HoldEnd struct {
	LockRef
	Token  int64
	Held   time.Duration // since the hold began
	Reason EndReason
	Cause  error // the cause its lock contexts were ended with
}

// RenewalRound describes one watchdog round.
type RenewalRound struct {
	Calls    int // renew script calls (batches)
	Renewed  int // holds renewed
	Lost     int // holds found gone
	Failed   int // holds in batches that failed, retried on the next tick
	Duration time.Duration
}

// ReplicaAck describes the replica acknowledgement of a granted acquire.
type ReplicaAck struct {
	LockRef
	Wanted   int           // replicas WithReplicaAck asks for
	Acked    int           // replicas that acknowledged within the timeout
	Duration time.Duration // the acquire and WAIT round trip, resends included
}

// ref names l for the hooks.
func (l *lock) ref() LockRef {
	return LockRef{Kind: l.kind.name, Name: l.name}
}

// callTrace is what the traces of an acquire and of an Unlock share: the
// context their start hook returned, and when the call began (alarm.Now;
// 0: the Client has no hooks, and nothing is reported). The hooks are the
// lock's Client's.
type callTrace struct {
	ctx   context.Context
	start time.Duration
}

// startTrace is a callTrace begun now, with the context the start hook
// returned.
func startTrace(ctx context.Context) callTrace {
	return callTrace{ctx: ctx, start: alarm.Now()}
}

// acquireTrace follows one acquire for the hooks; its zero value reports
// nothing. The acquire counts its attempts and wake-ups in it whether or
// not it reports: that costs nothing worth a branch. A waiter keeps it on
// its stack while it sleeps, so it is kept small: times as alarm.Now
// durations rather than time.Time, counts in 32 bits.
type acquireTrace struct {
	callTrace
	waitStart time.Duration // when the wait began (alarm.Now); 0 before
	attempts  int32
	wakeups   int32
}

// traceAcquire begins following an acquire by ctx.
func (l *lock) traceAcquire(ctx context.Context) acquireTrace {
	hk := l.c.cfg.hooks
	if hk == nil {
		return acquireTrace{}
	}
	return acquireTrace{callTrace: startTrace(hk.AcquireStart(ctx, l.ref()))}
}

// attempt counts an attempt of the call on l; the first one refused, in a
// call that may wait (waits), begins its wait, which the hooks are told
// (AcquireWait). A call on a lock its Client knows is contended skips its
// first attempt and subscribes first: when its ask is granted at once, it
// did not wait.
func (t *acquireTrace) attempt(l *lock, g grant, err error, waits bool) {
	t.attempts++
	if t.start == 0 || t.waitStart != 0 || !waits || err != nil || g.acquired {
		return
	}
	t.waitStart = alarm.Now() // 0 means it did not wait
	l.c.cfg.hooks.AcquireWait(t.ctx, l.ref())
}

// end reports the acquire's result: g and err, for the caller's ctx.
func (t *acquireTrace) end(ctx context.Context, l *lock, g grant, err error) {
	if t.start == 0 {
		return
	}
	now := alarm.Now()
	e := AcquireEnd{
		LockRef:  l.ref(),
		Outcome:  callOutcome(ctx, err),
		Err:      err,
		Duration: now - t.start,
		Waited:   t.waitStart != 0,
		Attempts: int(t.attempts),
		Wakeups:  int(t.wakeups),
	}
	if e.Waited {
		e.Wait = now - t.waitStart
	}
	switch {
	case err != nil:
	case g.acquired:
		e.Reentry, e.Count, e.Token = g.count > 1, g.count, g.token
	default:
		e.Outcome = OutcomeTimeout
	}
	l.c.cfg.hooks.AcquireEnd(t.ctx, e)
}

// callOutcome classifies a call's err: the caller's ctx ending first
// (a request that timed out on its own is an error), Close, or any other
// error. nil is OutcomeAcquired; callers refine it.
func callOutcome(ctx context.Context, err error) Outcome {
	switch {
	case err == nil:
		return OutcomeAcquired
	case errors.Is(ctx.Err(), context.Canceled):
		return OutcomeCanceled
	case ctx.Err() != nil:
		return OutcomeDeadline
	case errors.Is(err, ErrClosed):
		return OutcomeClosed
	}
	return OutcomeError
}

// releaseTrace follows one Unlock for the hooks; its zero value reports
// nothing.
type releaseTrace struct {
	callTrace
	result released
	left   int
	token  int64
}

// traceRelease begins following an Unlock by ctx.
func (l *lock) traceRelease(ctx context.Context) releaseTrace {
	hk := l.c.cfg.hooks
	if hk == nil {
		return releaseTrace{}
	}
	return releaseTrace{callTrace: startTrace(hk.ReleaseStart(ctx, l.ref()))}
}

// record records what the release request answered for turn tn.
func (t *releaseTrace) record(tn *turn, result released) {
	t.result, t.left = result, tn.count
	if tn.hold != nil {
		t.token = tn.hold.token
	}
}

// end reports the Unlock's result, err.
func (t *releaseTrace) end(l *lock, err error) {
	if t.start == 0 {
		return
	}
	e := ReleaseEnd{LockRef: l.ref(), Outcome: OutcomeError, Err: err, Duration: alarm.Now() - t.start, Left: t.left, Token: t.token}
	switch {
	case errors.Is(err, ErrNotHeld):
		e.Outcome = OutcomeNotHeld
	case err != nil:
	case t.result == freed:
		e.Outcome = OutcomeFreed
	default:
		e.Outcome = OutcomeStillHeld
	}
	l.c.cfg.hooks.ReleaseEnd(t.ctx, e)
}

// replicaAcked reports the replica acknowledgement of a granted acquire
// first sent at sent.
func (l *lock) replicaAcked(ctx context.Context, acks int64, sent time.Time) {
	if hk := l.c.cfg.hooks; hk != nil {
		hk.ReplicaAck(ctx, ReplicaAck{LockRef: l.ref(), Wanted: l.c.cfg.replicas, Acked: int(acks), Duration: time.Since(sent)})
	}
}

// renewalHook adapts the hooks, if any, to the watchdog's round callback:
// the watchdog does not import rlock.
func (cfg *config) renewalHook() func(watchdog.RoundStats) {
	hk := cfg.hooks
	if hk == nil {
		return nil
	}
	return func(r watchdog.RoundStats) {
		hk.RenewalRound(RenewalRound{Calls: r.Calls, Renewed: r.Renewed, Lost: r.Lost, Failed: r.Failed, Duration: r.Duration})
	}
}
