package rlock

import (
	"context"
	"fmt"

	"github.com/rlock/rlock/lua"
)

// CountDown counts the latch down by one; the count reaching 0 wakes every
// Await. On a latch at 0 or unset it does nothing.
//
// It counts exactly once: a call resent after a lost reply carries the
// request's first sequence number, and the script does not count a request
// twice; a request whose caller gave up is settled, as a Mutex's is, so
// that no copy of it counts later. It returns nil when the request counted,
// also when only the settling call learned that it had. An error means it
// did not count and will not, unless Redis stayed unreachable for the
// whole retry timeout of the settling call (the caveat of Mutex's request
// protocol: a copy still in flight then may count later).
func (d *CountDownLatch) CountDown(ctx context.Context) error {
	l := d.engine()
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	if ctx.Err() != nil {
		return l.wrap(fmt.Errorf("rlock: count down: %w", doneErr(ctx)))
	}
	// One Client's requests on a latch take turns in a slot, as an owner's
	// on a lock do: the script tells a request's calls from the ones before.
	s, err := l.c.take(ctx, holdID{key: l.keys.Value().Hash, field: l.c.id})
	if err != nil {
		return l.wrap(fmt.Errorf("rlock: count down: %w", err))
	}
	defer l.c.give(s)
	var first string
	rctx, cancel := context.WithTimeout(ctx, l.c.cfg.retryTimeout)
	_, err = l.countDown(rctx, s, &first, true)
	cancel()
	switch {
	case err == nil:
		return nil
	case s.unsettled == 0: // Redis answered: nothing to settle
		return l.wrap(err)
	}
	sctx, cancel := l.c.detached(ctx)
	defer cancel()
	counted, serr := l.countDown(sctx, s, &first, false)
	switch {
	case serr != nil:
		err = fmt.Errorf("%w; settling failed too: %w", err, serr)
	case counted:
		return nil
	}
	if ctx.Err() != nil {
		err = doneErr(ctx)
	}
	return l.wrap(err)
}

// countDown sends one request of slot s, whose turn the caller has, to
// count the latch down (or, with down false, only to settle the request's
// lost calls), and reports whether the request counted. first is the seq
// of the request's first call: set by the first, carried by the others.
func (l *lock) countDown(ctx context.Context, s *slot, first *string, down bool) (bool, error) {
	k := l.keys.Value()
	mode := "0"
	if down {
		mode = "1"
	}
	args := []string{l.c.id, "", "", "", l.c.fenceMs, l.c.publish, mode}
	reply, _, err := exchange(ctx, l.c, s, func(ctx context.Context, seq, superseded string) ([]int64, error) {
		if *first == "" {
			*first = seq
		}
		args[1], args[2], args[3] = seq, *first, superseded
		return lua.LatchCountDown.Exec(ctx, l.c.rc, []string{k.Hash, k.Channel, k.Fence}, args).AsIntSlice()
	})
	switch {
	case err != nil:
		return false, fmt.Errorf("rlock: count down: %w", err)
	case len(reply) == 2 && (reply[0] == int64(lua.NotCounted) || reply[0] == int64(lua.Counted)):
		return reply[0] == int64(lua.Counted), nil
	case len(reply) == 2 && reply[0] == int64(lua.Stale):
		return false, errStale
	}
	return false, fmt.Errorf("rlock: unexpected count down reply %v", reply)
}
