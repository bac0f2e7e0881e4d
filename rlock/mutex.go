package rlock

import (
	"context"
	"fmt"
	"time"
	"unique"

	"github.com/rlock/rlock/internal/keys"
)

// Mutex is a reentrant lock shared through Redis by every process that
// names it. Get one from Client.Mutex.
//
// The owner of a hold is carried by the context that Lock returns: pass that
// context (or one derived from it) to nested Lock calls, which re-enter, and
// to Unlock. Calling Lock twice with a context that carries no owner is two
// owners: the second call waits, as a second thread would in Java.
//
// A lock can be lost before Unlock (Redis restarted empty, a partition longer
// than the lease, a fixed lease running out). It is NOT safe to assume the
// lock is held until Unlock: watch the context Lock returns, which is done,
// with cause ErrLockLost, no later than the moment another owner could take
// the lock.
type Mutex struct {
	c    *Client
	name string
	keys unique.Handle[keys.Keys] // interned: handles of one lock share one copy
	err  error                    // set when the handle is unusable
}

// Name returns the lock's name.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Lock waits until the lock is free or held by ctx's owner, takes it, and
// returns a context carrying the owner. The watchdog renews the lock until
// the final Unlock. Lock returns an error when ctx is done first (wrapping
// ctx.Err()), when Redis fails, or after Close.
func (m *Mutex) Lock(ctx context.Context) (context.Context, error) {
	lctx, _, err := m.acquire(ctx, waitForever, 0)
	return lctx, err
}

// LockFor is Lock with a fixed lease: no watchdog renews it, and the
// returned context is done with cause ErrLockLost when the lease runs out
// (or just before, by the clock-drift allowance).
func (m *Mutex) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := validLease(lease); err != nil {
		return ctx, m.wrap(err)
	}
	lctx, _, err := m.acquire(ctx, waitForever, lease)
	return lctx, err
}

// TryLock tries to take the lock for up to wait (0: a single attempt) and
// reports whether it did. lease > 0 is a fixed lease as in LockFor; lease
// <= 0 hands the lock to the watchdog as in Lock. When the lock could not be
// taken in time it returns ctx unchanged, false and nil.
func (m *Mutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	lease, err := tryLockArgs(wait, lease)
	if err != nil {
		return ctx, false, m.wrap(err)
	}
	return m.acquire(ctx, wait, lease)
}

// check reports why m cannot make calls with ctx, if it cannot.
func (m *Mutex) check(ctx context.Context) error {
	switch {
	case m == nil || m.c == nil:
		return ErrNilClient
	case m.err != nil:
		return m.err
	case ctx == nil:
		return ErrNilContext
	}
	return m.c.usable()
}

// wrap names the lock in err.
func (m *Mutex) wrap(err error) error {
	return fmt.Errorf("%w (lock %q)", err, m.Name())
}

// tryLockArgs checks TryLock's wait and lease and returns the lease to
// take: 0, the watchdog's, for any lease <= 0.
func tryLockArgs(wait, lease time.Duration) (time.Duration, error) {
	if wait < 0 {
		return 0, fmt.Errorf("%w: wait %v is negative", ErrInvalidDuration, wait)
	}
	if lease <= 0 {
		return 0, nil
	}
	return lease, validLease(lease)
}

func validLease(lease time.Duration) error {
	if lease < MinLease {
		return fmt.Errorf("%w: lease %v is below %v", ErrInvalidDuration, lease, MinLease)
	}
	return nil
}
