package rlock

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
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
func (m *Mutex) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	if err := m.check(ctx); err != nil {
		return ctx, false, m.wrap(err)
	}
	if ctx.Err() != nil {
		return ctx, false, m.wrap(fmt.Errorf("rlock: acquire: %w", doneErr(ctx)))
	}
	octx, o := withOwner(ctx)
	id := m.holdID(o)

	lctx, g, err := m.attempt(octx, id, lease, false)
	if err == nil && !g.acquired && wait != 0 {
		lctx, g, err = m.wait(octx, o, wait, lease)
	}
	switch {
	case err != nil:
		return ctx, false, m.wrap(err)
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
func (m *Mutex) attempt(ctx context.Context, id holdID, lease time.Duration, waiting bool) (context.Context, grant, error) {
	lctx := ctx
	g, err := m.tryOnce(ctx, id, lease, waiting, func(s *slot) error {
		if !s.hold.carriedBy(ctx) {
			lctx = s.hold.bind(ctx)
		}
		if lctx.Err() == nil {
			return nil
		}
		m.giveBack(ctx, s, s.count-1, "a level granted to a done context")
		return context.Cause(lctx)
	})
	if err != nil || !g.acquired {
		return ctx, g, err
	}
	return lctx, g, nil
}

// tryOnce runs one acquire for id in its owner's turn, bounded by the retry
// timeout, and settles it when its reply never came. When it is granted, it
// calls granted in the turn, with the slot recording the grant; an error
// from granted fails the acquire. waiting says the caller waits on the
// unlock channel.
func (m *Mutex) tryOnce(ctx context.Context, id holdID, lease time.Duration, waiting bool, granted func(*slot) error) (grant, error) {
	s, err := m.c.take(ctx, id)
	if err != nil {
		return grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer m.c.give(s)
	rctx, cancel := context.WithTimeout(ctx, m.c.cfg.retryTimeout)
	g, err := m.grant(rctx, s, lease, waiting)
	cancel()
	if err == nil && g.acquired {
		err = granted(s)
	}
	if err != nil {
		m.settle(ctx, s)
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
func (m *Mutex) grant(ctx context.Context, s *slot, lease time.Duration, waiting bool) (grant, error) {
	set := m.c.leaseOr(lease)
	reply, sent, err := m.sendAcquire(ctx, m.acquireCall(s, set, waiting), s)
	if err != nil {
		return grant{}, err
	}
	g, err := parseGrant(reply)
	if err != nil || !g.acquired {
		return g, err
	}
	s.count = g.count
	h := s.activeHold()
	if h == nil {
		h = newHold(m.c, s.id, g.token)
		m.c.setHold(s, h)
	}
	if err := h.record(sent, set, lease == 0); err != nil {
		m.giveBack(ctx, s, g.count-1, "a level the watchdog refused")
		return grant{}, err
	}
	return g, nil
}

// scriptCall is one script's keys and arguments; the request protocol fills
// in the sequence numbers, args[1] and args[4], per call.
type scriptCall struct {
	keys, args []string
}

// acquireCall is the acquire script's call for slot s, setting lease.
func (m *Mutex) acquireCall(s *slot, lease time.Duration, waiting bool) scriptCall {
	flag := "0"
	if waiting {
		flag = "1"
	}
	return scriptCall{
		keys: []string{m.keys.Value().Hash, m.keys.Value().Token, m.keys.Value().Fence},
		args: []string{s.id.field, "", strconv.Itoa(s.count + 1), m.c.millis(lease), "", m.c.fenceMs, flag},
	}
}

// settle takes back whatever an acquire whose reply never came may have
// done: a release call back to the confirmed count supersedes the lost
// calls, so that none of them can apply later, and undoes the one that did.
// It runs in the slot's turn even when ctx is done, bounded by the retry
// timeout; if Redis stays unreachable, the lease bounds an orphan level and
// the owner's next call on the lock fences the lost ones.
func (m *Mutex) settle(ctx context.Context, s *slot) {
	if s.unsettled == 0 {
		return
	}
	m.giveBack(ctx, s, s.count, "an acquire whose reply was lost")
}

// parseGrant reads the acquire script's reply: {1, count, token}, {0, pttl}
// or {2, 0} (a stale copy, never the answer to a live request).
func parseGrant(reply []int64) (grant, error) {
	switch {
	case len(reply) == 3 && reply[0] == 1 && reply[1] > 0 && reply[1] <= math.MaxInt32:
		return grant{acquired: true, count: int(reply[1]), token: reply[2]}, nil
	case len(reply) == 2 && reply[0] == 0:
		return grant{pttl: fromMillis(reply[1])}, nil
	case len(reply) == 2 && reply[0] == 2:
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
