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
	lock // only its names, checks and Client: a latch takes no holds
}

// CountDownLatch returns a handle on the latch called name. Handles are
// cheap and safe for concurrent use; a latch never shares a key with the
// Mutex or Semaphore of the same name. Only the empty name is invalid; it
// is reported by the handle's first call.
func (c *Client) CountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{newLock(c, name, nil, keys.CheckName(name), func(prefix string) keys.Keys {
		return keys.NewLatch(prefix, name)
	})}
}

// engine returns d's engine, nil for a nil handle (see Mutex.engine).
func (d *CountDownLatch) engine() *lock {
	if d == nil {
		return nil
	}
	return &d.lock
}

// Name returns the latch's name.
func (d *CountDownLatch) Name() string {
	return d.engine().Name()
}

// TrySetCount sets the count to n > 0 when it is 0 or unset, and reports
// whether it did.
func (d *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	l := d.engine()
	if err := l.check(ctx); err != nil {
		return false, l.wrap(err)
	}
	if n <= 0 {
		return false, l.wrap(fmt.Errorf("%w: count %d: must be positive", ErrInvalidArgument, n))
	}
	set, err := lua.LatchSet.Exec(ctx, l.c.rc, []string{l.keys.Value().Hash}, []string{strconv.FormatInt(n, 10)}).AsInt64()
	if err != nil {
		return false, l.wrap(fmt.Errorf("rlock: latch set: %w", err))
	}
	return set == 1, nil
}

// Count returns the count: 0 when it reached 0 or was never set.
func (d *CountDownLatch) Count(ctx context.Context) (int64, error) {
	l := d.engine()
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Hget().Key(l.keys.Value().Hash).Field("count").Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, l.wrap(fmt.Errorf("rlock: latch count: %w", err))
	}
	return n, nil
}
