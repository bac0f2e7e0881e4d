package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if err := m.check(ctx); err != nil {
		return false, m.wrap(err)
	}
	n, err := m.c.rc.Do(ctx, m.c.rc.B().Exists().Key(m.keys.Value().Hash).Build()).AsInt64()
	if err != nil {
		return false, m.wrap(fmt.Errorf("rlock: exists: %w", err))
	}
	return n == 1, nil
}

// HoldCount returns how many times ctx's owner holds the lock: 0 when it
// does not hold it. Like Unlock, it answers for a lock context that is
// already done (after the final Unlock, say): such a context still names its
// owner.
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	if err := m.check(ctx); err != nil {
		return 0, m.wrap(err)
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return 0, nil
	}
	ctx, cancel := m.c.detached(ctx)
	defer cancel()
	n, err := m.c.rc.Do(ctx, m.c.rc.B().Hget().Key(m.keys.Value().Hash).Field(m.c.field(o)).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, m.wrap(fmt.Errorf("rlock: hget: %w", err))
	}
	return int(n), nil
}

// RemainingLease returns how long the lock's current lease has left in
// Redis: 0 when nobody holds it.
func (m *Mutex) RemainingLease(ctx context.Context) (time.Duration, error) {
	if err := m.check(ctx); err != nil {
		return 0, m.wrap(err)
	}
	ms, err := m.c.rc.Do(ctx, m.c.rc.B().Pttl().Key(m.keys.Value().Hash).Build()).AsInt64()
	if err != nil {
		return 0, m.wrap(fmt.Errorf("rlock: pttl: %w", err))
	}
	return time.Duration(max(ms, 0)) * time.Millisecond, nil
}

// FencingToken returns the fencing token of the hold on this lock that ctx
// carries, and false when ctx carries no active hold of it. Tokens strictly
// increase across successive holders of a lock and stay the same on
// re-entry: a store that rejects writes with a token lower than one it has
// seen turns away a holder whose lock was lost.
func (m *Mutex) FencingToken(ctx context.Context) (int64, bool) {
	if m.check(ctx) != nil {
		return 0, false
	}
	h, ok := ctx.Value(holdKey{m.c, m.keys.Value().Hash}).(*hold)
	if !ok || !h.active() {
		return 0, false
	}
	return h.token, true
}
