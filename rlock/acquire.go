package rlock

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rlock/rlock/lua"
)

// waitForever as a wait means: until ctx is done.
const waitForever time.Duration = -1

// grant is the acquire script's answer.
type grant struct {
	acquired bool
	count    int           // the owner's hold count, when acquired
	token    int64         // fencing token of the hold, when acquired
	pttl     time.Duration // the holder's remaining lease, when not acquired
	seq      uint64        // the seq of the call Redis answered, when not acquired
	gone     bool          // a re-entry found its hold gone and took nothing
}

// acquire takes l for ctx's owner, waiting up to wait (waitForever: until
// ctx is done) on the unlock channel. lease 0 means the watchdog's lease,
// renewed until the final unlock. It returns the lock context, or ctx
// unchanged and false when the wait ran out. (FairMutex's acquire is the
// same with the queue's wait.)
func (l *lock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	var a acquisition
	if l.begin(&a, ctx, wait, lease) {
		l.waitOnChannel(&a, wait, lease)
	}
	return l.end(&a, lease)
}

// acquisition is one acquire call on its way: the caller's context, the
// owner and the context that carries it, the trace for the hooks, and the
// outcome so far.
type acquisition struct {
	ctx, octx context.Context
	o         *owner
	trace     acquireTrace
	lctx      context.Context
	g         grant
	err       error
}

// begin starts a, an acquire of l by ctx's owner (a new owner when ctx
// carries none), with one attempt, and reports whether the acquire goes
// on to wait: the attempt found the lock held, and wait allows more. A
// new owner that may wait (wait is not 0) on a lock this Client knows is
// contended goes straight to the wait, which subscribes first: its
// attempt now would likely be refused. (a is filled in place, not
// returned: a waiter's stack keeps its caller's frame, and a copy there
// would double it.)
func (l *lock) begin(a *acquisition, ctx context.Context, wait, lease time.Duration) bool {
	a.ctx = ctx
	if a.err = l.check(ctx); a.err != nil {
		return false
	}
	if ctx.Err() != nil {
		a.err = fmt.Errorf("rlock: acquire: %w", doneErr(ctx))
		return false
	}
	a.octx, a.o = withOwner(ctx)
	a.trace = l.traceAcquire(a.octx)
	if fresh := a.octx == context.Context(a.o); fresh && wait != 0 && l.contended() {
		return true
	}
	l.firstAttempt(a, lease, wait != 0)
	return a.err == nil && !a.g.acquired && wait != 0
}

// firstAttempt is a's attempt before any wait; waits says a wait may
// follow a refusal.
func (l *lock) firstAttempt(a *acquisition, lease time.Duration, waits bool) {
	a.lctx, a.g, a.err = l.attempt(a.octx, l.holdID(a.o), lease, false)
	a.trace.attempt(l, a.g, a.err, waits)
}

// contended reports whether this Client knows l is contended: waiters of
// this Client wait on it, or did within the linger. The channel's name is
// built on the stack: a fresh Lock pays no allocation for the check.
func (l *lock) contended() bool {
	if !l.c.subs.Active() {
		return false
	}
	var name [128]byte
	return l.c.subs.Waiting(l.keys.AppendChannel(name[:0]))
}

// end reports the acquire to the hooks and returns what the caller gets.
// An acquire whose wait ran out before it asked (begin skipped its
// attempt, and the wait ran out in the subscribe, or parked behind a hold
// of its own Client) makes one attempt now, so that no wait tries less
// than a wait of 0; one that was handed the lock meanwhile has it. lease
// is the acquire's.
func (l *lock) end(a *acquisition, lease time.Duration) (context.Context, bool, error) {
	if a.err == nil && !a.g.acquired && a.trace.attempts == 0 {
		l.firstAttempt(a, lease, false)
	}
	a.trace.end(a.ctx, l, a.g, a.err)
	switch {
	case a.err != nil:
		return a.ctx, false, l.wrap(a.err)
	case !a.g.acquired:
		return a.ctx, false, nil
	}
	return a.lctx, true, nil
}

// attempt runs one acquire for id in its owner's turn, bounded by the
// retry timeout, and settles it when its reply never came. When granted,
// it returns the lock context: ctx when it already carries the hold (a
// re-entry), else ctx bound to the hold. waiting says the caller waits on
// the unlock channel.
func (l *lock) attempt(ctx context.Context, id holdID, lease time.Duration, waiting bool) (context.Context, grant, error) {
	t, err := l.c.take(ctx, id)
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer l.c.give(t)
	rctx, cancel := context.WithTimeout(ctx, l.c.cfg.retryTimeout)
	g, err := l.ask(rctx, t, lease, waiting)
	cancel()
	lctx := ctx
	if err == nil && g.acquired {
		lctx, err = l.bound(ctx, t)
	}
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", l.settle(ctx, t, err))
	}
	return lctx, g, nil
}

// ask sends one acquire for turn t, whose turn the caller has, and records
// a grant in t: its count and its hold, which the watchdog renews when
// lease is 0. waiting marks the lock so that its release wakes the waiters
// behind this one. With WithReplicaAck, a level that too few replicas
// acknowledged is given back and ask fails with ErrNotReplicated. On an
// error the request may be unsettled; the caller settles it.
func (l *lock) ask(ctx context.Context, t *turn, lease time.Duration, waiting bool) (grant, error) {
	acked := l.c.cfg.replicas > 0
	buf := callBufs.Get().(*callBuf)
	count := t.live() + 1
	call := l.acquireCallIn(buf, t.id.field, count, lease, waiting)
	var into [3]int64
	reply, acks, sent, err := l.c.exchangeInto(into[:0], ctx, t, l.kind.acquire, call, acked)
	freeCall(buf)
	if err != nil {
		return grant{}, err
	}
	g, err := parseGrant(reply)
	if err != nil || !g.acquired {
		g.seq = t.answered
		if h := t.activeHold(); err == nil && h != nil && !l.kind.rationed {
			// A re-entry refused: Redis no longer had the hold (another
			// Client's ForceUnlock, say). The holder learns it now, not
			// when the lock comes back to the owner (a FairMutex hands it
			// over afresh, at one level, which the re-entry then raised).
			h.finish(ErrLockLost)
		}
		if g.gone && t.live() == 0 {
			// Redis had lost the hold, and a re-entry takes nothing
			// (lua/hold.lua's gone): the owner, whose hold just ended,
			// asks again for a first level, under a new fencing token.
			// (Its count is 1 now, which gone never refuses.)
			return l.ask(ctx, t, lease, waiting)
		}
		return g, err
	}
	if acked {
		l.replicaAcked(ctx, acks, sent)
		if acks < int64(l.c.cfg.replicas) {
			return grant{}, l.unreplicated(ctx, t, count-1, acks)
		}
	}
	return g, l.keep(ctx, t, g, sent, lease)
}

// unreplicated gives back, to count, the level that only acks replicas
// acknowledged, and returns why.
func (l *lock) unreplicated(ctx context.Context, t *turn, count int, acks int64) error {
	err := fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acks, l.c.cfg.replicas, l.c.cfg.replicaTimeout)
	if rerr := l.giveBack(ctx, t, count, "an acquire the replicas did not acknowledge"); rerr != nil {
		err = fmt.Errorf("%w; %w", err, rerr)
	}
	return err
}

// keep records grant g in turn t, whose turn the caller has: its count,
// and its hold, whose lease Redis set no earlier than sent, and which the
// watchdog renews when lease is 0. A level the watchdog refuses is given
// back.
//
// A hold owns the levels granted through it and no others (turn.live), so
// that an Unlock with an ended hold's context never leaves a later hold's
// level (unlockTurn). A grant to t's live hold is its re-entry: the count
// sent, t's plus one, under the hold's fencing token (no other hold takes
// a token while it lives, and a re-entry of a hold Redis lost takes
// nothing: lua/hold.lua's gone). Should Redis answer anything else, the
// hold ends with ErrLockLost and the grant is a new hold, under its own
// fencing token. A re-entry of a hold that ended while it was under way
// is a new hold too, whose levels below its own, the ended hold's, are
// given back; when Redis no longer held any by then, the grant fails as
// lost.
func (l *lock) keep(ctx context.Context, t *turn, g grant, sent time.Time, lease time.Duration) error {
	h := t.activeHold()
	if h != nil && (g.count != t.count+1 || g.token != h.token) {
		h.finish(ErrLockLost)
		h = nil
	}
	t.count = g.count
	if h == nil {
		if g.count > 1 {
			if err := l.giveBack(ctx, t, 1, "the levels of a hold that ended"); err != nil {
				return err
			}
			if t.count != 1 {
				return ErrLockLost // Redis no longer held it when they were given back
			}
		}
		h = newHold(l, t, g.token)
	}
	if err := h.record(sent, l.c.leaseOr(lease), lease == 0); err != nil {
		l.giveBack(ctx, t, g.count-1, "a level the watchdog refused")
		return err
	}
	return nil
}

// bound returns the lock context of the grant just recorded in turn t,
// whose turn the caller has: ctx when it already carries the hold and ends
// with it (a re-entry), else ctx bound to the hold (a re-entry through a
// context that outlives the hold, as a downgrade's, too). A grant whose context would be
// done at once (ctx ended meanwhile, or the hold did) is given back, and
// its cause returned: Lock never succeeds with a done context.
func (l *lock) bound(ctx context.Context, t *turn) (context.Context, error) {
	lctx := ctx
	if !endsWith(ctx, t.hold) {
		lctx = t.hold.bind(ctx)
	}
	if lctx.Err() == nil {
		return lctx, nil
	}
	l.giveBack(ctx, t, t.count-1, "a level granted to a done context")
	return ctx, context.Cause(lctx)
}

// leaseOr returns lease, or the watchdog's lease for 0: what a request sets
// on the key.
func (c *Client) leaseOr(lease time.Duration) time.Duration {
	if lease == 0 {
		return c.cfg.lease
	}
	return lease
}

// acquireCall is the acquire script's call for owner field, at count
// (the owner's count after it), with lease (0: the watchdog's, which it
// renews), for a caller that waits on the unlock channel when waiting is
// true.
func (l *lock) acquireCall(field string, count int, lease time.Duration, waiting bool) scriptCall {
	return l.acquireCallIn(new(callBuf), field, count, lease, waiting)
}

// acquireCallIn is acquireCall in b, which must outlive the call's request.
// ARGV[10] says the lease is renewed: a fixed lease as long as the
// watchdog's is not (a fair lock hands it over for what it says), and
// Redis marks a fixed one so that no renewal lengthens it (lua/hold.lua).
func (l *lock) acquireCallIn(b *callBuf, field string, count int, lease time.Duration, waiting bool) scriptCall {
	k := l.keys.Value()
	b.keys = [5]string{k.Hash, k.Token, k.Fence, k.Queue, k.Channel}
	b.args = [11]string{field, "", strconv.Itoa(count), l.c.millis(l.c.leaseOr(lease)), "", l.c.fenceMs, flag(waiting), l.c.publish, l.c.leaseMs, flag(lease == 0)}
	return scriptCall{keys: b.keys[:], args: b.args[:10]}
}

// parseGrant reads the acquire script's reply: {Granted, count, token},
// {Refused, pttl}, {NotHeld, 0} (a re-entry of a hold Redis lost) or
// {Stale, 0} (a stale copy, never the answer to a live request).
func parseGrant(reply []int64) (grant, error) {
	switch {
	case len(reply) == 3 && reply[0] == int64(lua.Granted) && reply[1] > 0 && reply[1] <= math.MaxInt32:
		return grant{acquired: true, count: int(reply[1]), token: reply[2]}, nil
	case len(reply) == 2 && reply[0] == int64(lua.Refused):
		return grant{pttl: fromMillis(reply[1])}, nil
	case len(reply) == 2 && reply[0] == int64(lua.Stale):
		return grant{}, errStale
	case len(reply) == 2 && reply[0] == int64(lua.NotHeld) && reply[1] == 0:
		return grant{gone: true}, nil
	}
	return grant{}, fmt.Errorf("rlock: unexpected acquire reply %v", slices.Clone(reply)) // a copy: reply stays on its caller's stack
}

// fromMillis converts a PTTL in ms to a Duration, saturating where a
// Duration overflows: a key may be set to expire centuries away (EXPIREAT
// in the year 5000), and a waiter must then sleep long, not spin on a
// wrapped-around negative PTTL.
func fromMillis(ms int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > limit:
		return math.MaxInt64
	case ms < -limit:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}
