package rlock

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/rlock/rlock/lua"
)

// released is the release script's answer.
type released int64

const (
	notHeld   = released(lua.NotHeld)   // the owner did not hold the lock
	stillHeld = released(lua.StillHeld) // levels remain
	freed     = released(lua.Freed)     // no level left: the lock is free
)

// unlock leaves one level of the hold of l's kind that ctx's owner has,
// even when ctx is done (bounded by the retry timeout); see Mutex.Unlock.
func (l *lock) unlock(ctx context.Context) (err error) {
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	t := l.traceRelease(ctx)
	defer func() { t.end(l, err) }()
	o, ok := ownerFrom(ctx)
	if !ok {
		return l.wrap(ErrNotHeld)
	}
	uctx, cancel := l.c.detached(ctx)
	defer cancel()
	s, err := l.c.take(uctx, l.holdID(o))
	if err != nil {
		return l.wrap(fmt.Errorf("rlock: release: %w", err))
	}
	defer l.c.give(s)
	if s.count == 0 {
		l.settle(uctx, s)
		return l.wrap(ErrNotHeld)
	}
	result, err := l.leave(uctx, s, s.count-1)
	t.record(s, result)
	switch {
	case err != nil:
		if h := s.activeHold(); h != nil {
			h.finish(fmt.Errorf("%w: %w", errUnlockFailed, err))
		}
		return l.wrap(err)
	case result == notHeld:
		return l.wrap(ErrNotHeld)
	}
	return nil
}

// giveBack sets the owner's count back to target in slot s's turn, even
// when ctx is done (bounded by the retry timeout): it takes back a level
// that was granted and cannot be kept, or what a call whose reply was lost
// may have done. A failure is logged as about what; the lease then frees
// the level.
func (l *lock) giveBack(ctx context.Context, s *slot, target int, what string) error {
	rctx, cancel := l.c.detached(ctx)
	defer cancel()
	_, err := l.leave(rctx, s, target)
	if err != nil {
		l.c.cfg.logger.Warn("rlock: could not give back "+what+"; its lease will free it", "key", l.keys.Value().Hash, "err", err)
	}
	return err
}

// leave sets the owner's hold count to target with one release request in
// slot s's turn, within ctx, and records the outcome in s: the count left,
// and the end of the hold when no level is left (a loss when Redis says the
// owner held none).
func (l *lock) leave(ctx context.Context, s *slot, target int) (released, error) {
	keys := []string{l.keys.Value().Hash, l.keys.Value().Channel, l.keys.Value().Fence}
	args := []string{s.id.field, "", strconv.Itoa(max(target, 0)), l.c.publish, "", l.c.fenceMs}
	if l.kind.releaseMore != nil {
		keys = append(keys, l.kind.releaseMore(l)...)
	}
	reply, _, err := exchange(ctx, l.c, s, func(ctx context.Context, seq, superseded string) ([]int64, error) {
		args[1], args[4] = seq, superseded
		return l.kind.release.Exec(ctx, l.c.rc, keys, args).AsIntSlice()
	})
	if err != nil {
		return 0, fmt.Errorf("rlock: release: %w", err)
	}
	result, left, err := parseRelease(reply)
	if err != nil {
		return 0, err
	}
	if result == notHeld && target == 0 && args[4] != "0" && s.activeHold() != nil {
		// The answering call superseded one whose reply was lost, which
		// may have freed the lock: with the hold live until now, it did.
		// (A hold already known lost was gone before: ErrNotHeld.)
		result = freed
	}
	s.count = left
	if h := s.activeHold(); h != nil {
		switch result {
		case notHeld:
			h.finish(ErrLockLost)
		case freed:
			h.finish(context.Canceled)
		}
	}
	return result, nil
}

// parseRelease reads the release script's reply: {outcome, count left}, or
// {Stale, 0} for a stale copy, which a live request never gets.
func parseRelease(reply []int64) (released, int, error) {
	switch {
	case len(reply) != 2:
	case reply[0] == int64(stillHeld) && reply[1] > 0 && reply[1] <= math.MaxInt32:
		return stillHeld, int(reply[1]), nil
	case (reply[0] == int64(notHeld) || reply[0] == int64(freed)) && reply[1] == 0:
		return released(reply[0]), 0, nil
	case reply[0] == int64(lua.Stale):
		return 0, 0, errStale
	}
	return 0, 0, fmt.Errorf("rlock: unexpected release reply %v", reply)
}

// forceUnlock deletes the resource's hash whoever holds it and wakes a
// waiter; this Client's holds on it end with ErrLockLost. See
// Mutex.ForceUnlock.
func (l *lock) forceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, l.wrap(err)
	}
	keys := []string{l.keys.Value().Hash, l.keys.Value().Channel}
	reply, err := lua.ForceRelease.Exec(ctx, l.c.rc, keys, []string{l.c.publish}).AsInt64()
	if err != nil {
		return false, l.wrap(fmt.Errorf("rlock: force release: %w", err))
	}
	for _, h := range l.c.holdsOn(l.keys.Value().Hash) {
		h.finish(errForceUnlocked)
	}
	return reply == 1, nil
}
