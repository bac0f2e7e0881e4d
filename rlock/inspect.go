package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	return m.engine().isLocked(ctx)
}

// HoldCount returns how many times ctx's owner holds the lock: 0 when it
// does not hold it. Like Unlock, it answers for a lock context that is
// already done (after the final Unlock, say): such a context still names its
// owner.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	return m.engine().holdCount(ctx)
}

// RemainingLease returns how long the lock's current lease has left in
// Redis: 0 when nobody holds it.
func (m *Mutex) RemainingLease(ctx context.Context) (time.Duration, error) {
	return m.engine().remainingLease(ctx)
}

// FencingToken returns the fencing token of the hold on this lock that ctx
// carries, and false when ctx carries no active hold of it. Tokens strictly
// increase across successive holders of a lock and stay the same on
// re-entry: a store that rejects writes with a token lower than one it has
// seen turns away a holder whose lock was lost.
func (m *Mutex) FencingToken(ctx context.Context) (int64, bool) {
	return m.engine().fencingToken(ctx)
}

// isLocked reports whether the resource's hash exists.
func (l *lock) isLocked(ctx context.Context) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, l.wrap(err)
	}
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Exists().Key(l.keys.Value().Hash).Build()).AsInt64()
	if err != nil {
		return false, l.wrap(fmt.Errorf("rlock: exists: %w", err))
	}
	return n == 1, nil
}

// holdCount reads the count of ctx's owner's field of l's kind; 0 when ctx
// names no owner or the field is missing.
func (l *lock) holdCount(ctx context.Context) (int, error) {
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return 0, nil
	}
	ctx, cancel := l.c.detached(ctx)
	defer cancel()
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Hget().Key(l.keys.Value().Hash).Field(l.holdID(o).field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, l.wrap(fmt.Errorf("rlock: hget: %w", err))
	}
	return int(n), nil
}

// remainingLease reads the PTTL of the resource's hash: 0 when it is gone.
func (l *lock) remainingLease(ctx context.Context) (time.Duration, error) {
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	ms, err := l.c.rc.Do(ctx, l.c.rc.B().Pttl().Key(l.keys.Value().Hash).Build()).AsInt64()
	if err != nil {
		return 0, l.wrap(fmt.Errorf("rlock: pttl: %w", err))
	}
	return time.Duration(max(ms, 0)) * time.Millisecond, nil
}

// fencingToken is the token of the active hold on l that ctx carries.
func (l *lock) fencingToken(ctx context.Context) (int64, bool) {
	if l.check(ctx) != nil {
		return 0, false
	}
	h, ok := l.carried(ctx)
	if !ok {
		return 0, false
	}
	return h.token, true
}
