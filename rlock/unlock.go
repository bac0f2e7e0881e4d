package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/rlock/rlock/lua"
)

// released is the release script's answer.
type released int64

const (
	notHeld   released = 0 // the owner did not hold the lock
	stillHeld released = 1 // one level left, more remain
	freed     released = 2 // the last level left: the lock is free
)

// Unlock leaves one level of the hold that ctx's owner has; the last level
// frees the lock, stops its renewal, ends its context, and wakes a waiter.
// It returns ErrNotHeld when that owner does not hold the lock, leaving the
// real holder's lock intact.
//
// Unlock runs even when ctx is already done, bounded by the retry timeout,
// so that a cancelled request does not leave its lock held. If it fails for
// another reason, renewal stops all the same and the lease frees the lock.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return m.wrap(err)
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return m.wrap(ErrNotHeld)
	}
	id := holdID{key: m.keys.Hash, field: m.c.field(o)}
	h := m.c.lookup(id)
	lease := m.c.cfg.lease
	if h != nil {
		lease = h.currentLease()
	}

	uctx, cancel := m.c.detached(ctx)
	defer cancel()
	result, sent, err := m.release(uctx, id.field, lease)
	switch {
	case err != nil:
		if h != nil {
			h.finish(fmt.Errorf("%w: unlock failed: %w", ErrLockLost, err))
		}
		return m.wrap(err)
	case result == notHeld:
		if h != nil {
			h.finish(ErrLockLost)
		}
		return m.wrap(ErrNotHeld)
	case result == stillHeld:
		if h != nil {
			h.extend(sent)
		}
	case result == freed:
		if h != nil {
			h.finish(context.Canceled)
		}
	}
	return nil
}

// release runs the release script for field once, resending it with the same
// request id while its outcome is unknown, so one level is left at most once.
// lease is set again on the key when levels remain.
func (m *Mutex) release(ctx context.Context, field string, lease time.Duration) (released, time.Time, error) {
	keys := []string{m.keys.Hash, m.keys.Channel, m.keys.Latch(m.c.requestID())}
	args := []string{field, millis(lease), millis(m.c.latchLife()), m.c.publish}
	reply, sent, err := m.c.run(ctx, lua.Release, keys, args)
	if err != nil {
		return 0, sent, fmt.Errorf("rlock: release: %w", err)
	}
	result, err := parseRelease(reply)
	return result, sent, err
}

// parseRelease reads the release script's reply: {outcome, count}.
func parseRelease(reply []int64) (released, error) {
	if len(reply) != 2 || reply[0] < int64(notHeld) || reply[0] > int64(freed) {
		return 0, fmt.Errorf("rlock: unexpected release reply %v", reply)
	}
	return released(reply[0]), nil
}

// ForceUnlock deletes the lock whoever holds it and wakes a waiter. It
// reports whether there was a lock to delete. This Client's own holds on the
// lock end with ErrLockLost.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, m.wrap(err)
	}
	keys := []string{m.keys.Hash, m.keys.Channel}
	reply, err := lua.ForceRelease.Exec(ctx, m.c.rc, keys, []string{m.c.publish}).AsInt64()
	if err != nil {
		return false, m.wrap(fmt.Errorf("rlock: force release: %w", err))
	}
	for _, h := range m.c.holdsOn(m.keys.Hash) {
		h.finish(fmt.Errorf("%w: force-unlocked", ErrLockLost))
	}
	return reply == 1, nil
}
