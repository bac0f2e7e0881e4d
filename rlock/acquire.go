package rlock

import (
	"context"
	"fmt"
	"math"
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
}

// acquire takes the lock for ctx's owner, waiting up to wait (waitForever:
// until ctx is done). lease 0 means the watchdog's lease, renewed until
// Unlock.
func (l *lock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	if err := l.check(ctx); err != nil {
		return ctx, false, l.wrap(err)
	}
	if ctx.Err() != nil {
		return ctx, false, l.wrap(fmt.Errorf("rlock: acquire: %w", doneErr(ctx)))
	}
	octx, o := withOwner(ctx)
	id := l.holdID(o)
	t := l.traceAcquire(octx)

	lctx, g, err := l.attempt(octx, id, lease, false)
	t.attempted()
	if err == nil && !g.acquired && wait != 0 {
		t.waiting(l)
		waitFor := (*lock).wait
		if l.kind.wait != nil {
			waitFor = l.kind.wait
		}
		lctx, g, err = waitFor(l, octx, o, wait, lease, &t)
	}
	t.end(ctx, l, g, err)
	switch {
	case err != nil:
		return ctx, false, l.wrap(err)
	case !g.acquired:
		return ctx, false, nil
	}
	return lctx, true, nil
}

// attempt runs one acquire for id in its owner's turn and, when granted,
// returns the lock context: ctx when it already carries the hold (a
// re-entry), else ctx bound to the hold. A grant whose context would be done
// at once (ctx ended meanwhile, or the hold did) is given back: Lock never
// succeeds with a done context.
func (l *lock) attempt(ctx context.Context, id holdID, lease time.Duration, waiting bool) (context.Context, grant, error) {
	lctx := ctx
	g, err := l.tryOnce(ctx, id, lease, waiting, func(s *slot) (err error) {
		lctx, err = l.bound(ctx, s)
		return err
	})
	if err != nil || !g.acquired {
		return ctx, g, err
	}
	return lctx, g, nil
}

// bound returns the lock context of the grant just recorded in slot s,
// whose turn the caller has: ctx when it already carries the hold (a
// re-entry), else ctx bound to the hold. A grant whose context would be
// done at once is given back, and its cause returned.
func (l *lock) bound(ctx context.Context, s *slot) (context.Context, error) {
	lctx := ctx
	if !s.hold.carriedBy(ctx) {
		lctx = s.hold.bind(ctx)
	}
	if lctx.Err() == nil {
		return lctx, nil
	}
	l.giveBack(ctx, s, s.count-1, "a level granted to a done context")
	return ctx, context.Cause(lctx)
}

// tryOnce runs one acquire for id in its owner's turn, bounded by the retry
// timeout, and settles it when its reply never came. When it is granted, it
// calls granted in the turn, with the slot recording the grant; an error
// from granted fails the acquire. waiting says the caller waits on the
// unlock channel.
func (l *lock) tryOnce(ctx context.Context, id holdID, lease time.Duration, waiting bool, granted func(*slot) error) (grant, error) {
	s, err := l.c.take(ctx, id)
	if err != nil {
		return grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer l.c.give(s)
	rctx, cancel := context.WithTimeout(ctx, l.c.cfg.retryTimeout)
	g, err := l.grant(rctx, s, lease, waiting)
	cancel()
	if err == nil && g.acquired {
		err = granted(s)
	}
	if err != nil {
		l.settle(ctx, s)
		if ctx.Err() != nil {
			err = doneErr(ctx)
		}
		return grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	return g, nil
}

// grant sends one acquire for slot s, whose turn the caller has, and records
// a grant in s: its count and its hold, which the watchdog renews when
// lease is 0. waiting marks the lock so that its release wakes the waiters
// behind this one. On an error the request may be unsettled; the caller
// settles it.
func (l *lock) grant(ctx context.Context, s *slot, lease time.Duration, waiting bool) (grant, error) {
	set := l.c.leaseOr(lease)
	reply, sent, err := l.sendAcquire(ctx, l.acquireCall(s, set, waiting), s)
	if err != nil {
		return grant{}, err
	}
	g, err := parseGrant(reply)
	if err != nil || !g.acquired {
		return g, err
	}
	return g, l.keep(ctx, s, g, sent, lease)
}

// keep records grant g in slot s, whose turn the caller has: its count,
// and its hold, whose lease Redis set no earlier than sent, and which the
// watchdog renews when lease is 0. A level the watchdog refuses is given
// back.
func (l *lock) keep(ctx context.Context, s *slot, g grant, sent time.Time, lease time.Duration) error {
	s.count = g.count
	h := s.activeHold()
	if h == nil {
		h = newHold(l, s.id, g.token)
		l.c.setHold(s, h)
	}
	if err := h.record(sent, l.c.leaseOr(lease), lease == 0); err != nil {
		l.giveBack(ctx, s, g.count-1, "a level the watchdog refused")
		return err
	}
	return nil
}

// scriptCall is one script's keys and arguments; the request protocol fills
// in the sequence numbers, args[1] and args[4], per call.
type scriptCall struct {
	keys, args []string
}

// acquireCall is the acquire script's call for slot s, setting lease.
func (l *lock) acquireCall(s *slot, lease time.Duration, waiting bool) scriptCall {
	flag := "0"
	if waiting {
		flag = "1"
	}
	call := scriptCall{
		keys: []string{l.keys.Value().Hash, l.keys.Value().Token, l.keys.Value().Fence},
		args: []string{s.id.field, "", strconv.Itoa(s.count + 1), l.c.millis(lease), "", l.c.fenceMs, flag},
	}
	if l.kind.acquireMore != nil {
		keys, args := l.kind.acquireMore(l, lease)
		call.keys, call.args = append(call.keys, keys...), append(call.args, args...)
	}
	return call
}

// settle takes back whatever an acquire whose reply never came may have
// done: a release call back to the confirmed count supersedes the lost
// calls, so that none of them can apply later, and undoes the one that did.
// It runs in the slot's turn even when ctx is done, bounded by the retry
// timeout; if Redis stays unreachable, the lease bounds an orphan level and
// the owner's next call on the lock fences the lost ones.
func (l *lock) settle(ctx context.Context, s *slot) {
	if s.unsettled == 0 {
		return
	}
	l.giveBack(ctx, s, s.count, "an acquire whose reply was lost")
}

// parseGrant reads the acquire script's reply: {Granted, count, token},
// {Refused, pttl} or {Stale, 0} (a stale copy, never the answer to a live
// request).
func parseGrant(reply []int64) (grant, error) {
	switch {
	case len(reply) == 3 && reply[0] == int64(lua.Granted) && reply[1] > 0 && reply[1] <= math.MaxInt32:
		return grant{acquired: true, count: int(reply[1]), token: reply[2]}, nil
	case len(reply) == 2 && reply[0] == int64(lua.Refused):
		return grant{pttl: fromMillis(reply[1])}, nil
	case len(reply) == 2 && reply[0] == int64(lua.Stale):
		return grant{}, errStale
	}
	return grant{}, fmt.Errorf("rlock: unexpected acquire reply %v", reply)
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
