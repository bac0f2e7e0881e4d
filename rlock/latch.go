package rlock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// CountDownLatch lets processes wait until a count, set once, has been
// counted down to 0 (Java's CountDownLatch, Redisson's RCountDownLatch).
// Get one from Client.CountDownLatch.
//
// Await sleeps on the latch's channel and wakes when the count reaches 0;
// it never polls. Each CountDown request counts exactly once, also when its
// reply was lost and it was resent; one that returns an error did not count
// and never will.
//
// A latch lives in Redis only: if Redis loses it (a restart without
// persistence, a failover before replication, eviction, a deleted key), it
// reads as 0, so Await returns at once, as for a latch that was never set,
// and CountDown does nothing until TrySetCount sets it again. Do not rely
// on a latch to hold processes back across a Redis that loses data.
type CountDownLatch struct {
	resource // a latch takes no holds: it is a resource, not a lock
}

// CountDownLatch returns a handle on the latch called name. Handles are
// cheap and safe for concurrent use; a latch never shares a key with the
// Mutex or Semaphore of the same name. Only the empty name is invalid; it
// is reported by the handle's first call.
func (c *Client) CountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{newResource(c, name, keys.CheckName(name), keys.NewLatchRef(c.prefix(), name))}
}

// latch returns d's resource, nil for a nil handle: its methods answer
// ErrNilClient then.
func (d *CountDownLatch) latch() *resource {
	if d == nil {
		return nil
	}
	return &d.resource
}

// Name returns the latch's name.
func (d *CountDownLatch) Name() string {
	return d.latch().Name()
}

// TrySetCount sets the count to n, from 1 to MaxCount, when it is 0 or
// unset, and reports whether it did. It runs once: it applies before it
// returns or never, unless its error wraps ErrOutcomeUnknown.
func (d *CountDownLatch) TrySetCount(ctx context.Context, n int) (bool, error) {
	l := d.latch()
	if err := l.check(ctx); err != nil {
		return false, l.wrap(err)
	}
	if err := checkCount("count", n, 1); err != nil {
		return false, l.wrap(err)
	}
	set, err := l.once(ctx, lua.LatchSet, l.keys.Value().Fence, []string{l.keys.Hash()}, []string{strconv.Itoa(n)})
	if err != nil {
		return false, l.wrap(fmt.Errorf("rlock: latch set: %w", err))
	}
	return set == 1, nil
}

// Count returns the count: 0 when it reached 0 or was never set.
func (d *CountDownLatch) Count(ctx context.Context) (int, error) {
	n, _, err := d.state(ctx)
	return n, err
}

// state reads the count and the name of its setting (lua/latch_set.lua's
// 'gen': "" for an unset latch).
func (d *CountDownLatch) state(ctx context.Context) (int, string, error) {
	l := d.latch()
	if err := l.check(ctx); err != nil {
		return 0, "", l.wrap(err)
	}
	fields, err := l.c.rc.Do(ctx, l.c.rc.B().Hmget().Key(l.keys.Hash()).Field("count", "gen").Build()).ToArray()
	if err != nil {
		return 0, "", l.wrap(fmt.Errorf("rlock: latch count: %w", err))
	}
	n, err := fields[0].AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		return 0, "", l.wrap(fmt.Errorf("rlock: latch count: %w", err))
	}
	gen, _ := fields[1].ToString()
	return int(n), gen, nil
}

// CountDown counts the latch down by one; the count reaching 0 wakes every
// Await. On a latch at 0 or unset it does nothing.
//
// It counts exactly once: a call resent after a lost reply carries the
// request's first sequence number, and the script does not count a request
// twice; a request whose caller gave up is settled, as a Mutex's is, so
// that no copy of it counts later. It returns nil when the request counted,
// also when only the settling call learned that it had. An error means it
// did not count and will not, unless it wraps ErrOutcomeUnknown: the
// settling call got no answer either (Redis unreachable for its whole
// retry timeout), and a copy still in flight may count later. Do not
// count down again on that error without knowing (the count never
// expires): the latch would open early.
func (d *CountDownLatch) CountDown(ctx context.Context) error {
	l := d.latch()
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	if ctx.Err() != nil {
		return l.wrap(fmt.Errorf("rlock: count down: %w", doneErr(ctx)))
	}
	t, first, err := l.clientTurn(ctx)
	if err != nil {
		return l.wrap(fmt.Errorf("rlock: count down: %w", err))
	}
	defer l.c.give(t)
	rctx, cancel := context.WithTimeout(ctx, l.c.cfg.retryTimeout)
	_, err = l.countDown(rctx, t, first, true)
	cancel()
	switch {
	case err == nil:
		return nil
	case t.unsettled == 0: // Redis answered: nothing to settle
		return l.wrap(err)
	}
	sctx, cancel := l.c.detached(ctx)
	defer cancel()
	counted, serr := l.countDown(sctx, t, first, false)
	if counted && serr == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = doneErr(ctx)
	}
	if serr != nil {
		err = fmt.Errorf("%w; %w: settling: %w", err, ErrOutcomeUnknown, serr)
	}
	return l.wrap(err)
}

// countDown sends one call of the request in turn t, whose turn the
// caller has, to count the latch down (or, with down false, only to settle
// the request's lost calls), and reports whether the request counted.
// first is the number reserved before the request's first call.
func (l *resource) countDown(ctx context.Context, t *turn, first string, down bool) (bool, error) {
	k := l.keys.Value()
	call := scriptCall{
		keys: []string{k.Hash, k.Channel, k.Fence},
		args: []string{l.c.id, "", first, flag(down), "", l.c.fenceMs, l.c.publish},
	}
	reply, _, _, err := l.c.exchange(ctx, t, lua.LatchCountDown, call, false)
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

// Await returns when the latch's count is 0: at once when it is 0 or was
// never set, else when the CountDown that brings it to 0 wakes it, even
// when the latch was set again before this Await read it. It returns
// ctx's error, wrapped, when ctx is done first, Redis's when reading the
// count fails, and ErrClosed after Close.
//
// It subscribes to the latch's channel before it reads the count, so a
// CountDown between the two cannot be missed, and then sleeps until a
// message (or a subscription made again after a lost connection, which
// may have lost one) makes it read the count again: it never polls. It
// returns when the count is 0, or when the latch was set again since the
// first read found it counting (lua/latch_set.lua's 'gen'): it reached 0 in
// between, even when it expired at 0 before it was set again.
func (d *CountDownLatch) Await(ctx context.Context) error {
	l := d.latch()
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	w, err := l.c.subs.Subscribe(ctx, l.keys.Value().Channel)
	if err != nil {
		if ferr := subscribeFailed(ctx, err); ferr != nil {
			err = ferr
		}
		return l.wrap(err)
	}
	defer w.Done(true)
	var began string // 'gen' at the first read
	for first := true; ; first = false {
		n, gen, err := d.state(ctx)
		switch {
		case err != nil:
			return err
		case n <= 0:
			return nil
		case first:
			began = gen
		case gen != began:
			return nil
		}
		select {
		case <-w.Wake():
		case <-ctx.Done():
			return l.wrap(fmt.Errorf("rlock: await: %w", doneErr(ctx)))
		}
	}
}

// Inspect reads the latch's state in Redis, its count included; see
// LockState. It is a diagnostic for operators, not a synchronisation
// primitive.
func (d *CountDownLatch) Inspect(ctx context.Context) (LockState, error) {
	return d.latch().inspectAs(ctx, KindLatch)
}
