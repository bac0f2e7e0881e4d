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
	notHeld   released = 0 // the owner did not hold the lock
	stillHeld released = 1 // levels remain
	freed     released = 2 // no level left: the lock is free
)

// Unlock leaves one level of the hold that ctx's owner has; the last level
// frees the lock, stops its renewal, ends its context, and wakes a waiter.
// It returns ErrNotHeld when that owner does not hold the lock, leaving the
// real holder's lock intact.
//
// Unlock runs even when ctx is already done, bounded by the retry timeout,
// so that a cancelled request does not leave its lock held. If it fails for
// another reason, renewal stops all the same and the lease frees the lock;
// calling Unlock again with the same context retries it.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return m.wrap(err)
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return m.wrap(ErrNotHeld)
	}
	uctx, cancel := m.c.detached(ctx)
	defer cancel()
	s, err := m.c.take(uctx, m.holdID(o))
	if err != nil {
		return m.wrap(fmt.Errorf("rlock: release: %w", err))
	}
	defer m.c.give(s)
	if s.count == 0 {
		m.settle(uctx, s)
		return m.wrap(ErrNotHeld)
	}
	result, err := m.leave(uctx, s, s.count-1)
	switch {
	case err != nil:
		if h := s.activeHold(); h != nil {
			h.finish(fmt.Errorf("%w: unlock failed: %w", ErrLockLost, err))
		}
		return m.wrap(err)
	case result == notHeld:
		return m.wrap(ErrNotHeld)
	}
	return nil
}

// giveBack sets the owner's count back to target in slot s's turn, even
// when ctx is done (bounded by the retry timeout): it takes back a level
// that was granted and cannot be kept, or what a call whose reply was lost
// may have done. A failure is logged as about what; the lease then frees
// the level.
func (m *Mutex) giveBack(ctx context.Context, s *slot, target int, what string) error {
	rctx, cancel := m.c.detached(ctx)
	defer cancel()
	_, err := m.leave(rctx, s, target)
	if err != nil {
		m.c.cfg.logger.Warn("rlock: could not give back "+what+"; its lease will free it", "key", m.keys.Value().Hash, "err", err)
	}
	return err
}

// leave sets the owner's hold count to target with one release request in
// slot s's turn, within ctx, and records the outcome in s: the count left,
// and the end of the hold when no level is left (a loss when Redis says the
// owner held none).
func (m *Mutex) leave(ctx context.Context, s *slot, target int) (released, error) {
	keys := []string{m.keys.Value().Hash, m.keys.Value().Channel, m.keys.Value().Fence}
	args := []string{s.id.field, "", strconv.Itoa(max(target, 0)), m.c.publish, "", m.c.fenceMs}
	reply, _, err := exchange(ctx, m.c, s, func(ctx context.Context, seq, superseded string) ([]int64, error) {
		args[1], args[4] = seq, superseded
		return lua.Release.Exec(ctx, m.c.rc, keys, args).AsIntSlice()
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
// {3, 0} for a stale copy, which a live request never gets.
func parseRelease(reply []int64) (released, int, error) {
	switch {
	case len(reply) != 2:
	case reply[0] == int64(stillHeld) && reply[1] > 0 && reply[1] <= math.MaxInt32:
		return stillHeld, int(reply[1]), nil
	case (reply[0] == int64(notHeld) || reply[0] == int64(freed)) && reply[1] == 0:
		return released(reply[0]), 0, nil
	case reply[0] == 3:
		return 0, 0, errStale
	}
	return 0, 0, fmt.Errorf("rlock: unexpected release reply %v", reply)
}

// ForceUnlock deletes the lock whoever holds it and wakes a waiter. It
// reports whether there was a lock to delete. This Client's own holds on the
// lock end with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, m.wrap(err)
	}
	keys := []string{m.keys.Value().Hash, m.keys.Value().Channel}
	reply, err := lua.ForceRelease.Exec(ctx, m.c.rc, keys, []string{m.c.publish}).AsInt64()
	if err != nil {
		return false, m.wrap(fmt.Errorf("rlock: force release: %w", err))
	}
	for _, h := range m.c.holdsOn(m.keys.Value().Hash) {
		h.finish(fmt.Errorf("%w: force-unlocked", ErrLockLost))
	}
	return reply == 1, nil
}
