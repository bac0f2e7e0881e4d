package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/rlock/rlock/lua"
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
	lock
}

// mutexKind is Mutex's: one reentrant owner at a time.
var mutexKind = &kind{
	name:    "mutex",
	acquire: lua.Acquire,
	release: lua.Release,
}

// engine returns m's lock engine, nilLock for a nil handle: the engine's
// methods answer ErrNilClient then, where a promoted call would panic.
func (m *Mutex) engine() *lock {
	if m == nil {
		return &nilLock
	}
	return &m.lock
}

// acquire is lock.acquire with the Mutex's wait, parked in its Client's
// lot (waitParked).
func (m *Mutex) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	l := m.engine()
	var a acquisition
	if l.begin(&a, ctx, wait, lease) {
		l.waitParked(&a, wait, lease)
	}
	return l.end(&a, lease)
}

// Name returns the lock's name.
func (m *Mutex) Name() string {
	return m.engine().Name()
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
		return ctx, m.engine().wrap(err)
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
		return ctx, false, m.engine().wrap(err)
	}
	return m.acquire(ctx, wait, lease)
}

// Unlock leaves one level of the hold that ctx's owner has; the last level
// frees the lock, stops its renewal, ends its context, and wakes a waiter.
// It returns ErrNotHeld when that owner does not hold the lock, leaving the
// real holder's lock intact; and when ctx is the lock context of a hold
// that ended (its final Unlock, or a loss) while the owner holds the lock
// again under a later hold, whose levels are not ctx's to leave.
//
// Unlock runs even when ctx is already done, bounded by the retry timeout,
// so that a cancelled request does not leave its lock held. If it fails for
// another reason (Redis unreachable, or another call of the same owner
// kept the owner's turn past the retry timeout), the hold ends all the
// same: renewal stops, its context is done, and the lease frees the lock;
// calling Unlock again with the same context retries it. (A hold owns only
// the levels granted through it: once the owner Locks again, which begins a
// new hold, the levels an ended hold left in Redis are let go.)
//
// One case it cannot tell apart: a final Unlock whose first call was lost,
// and whose resend finds the lock gone. Its lost call may have freed the
// lock, or the lock may have been lost just before (a ForceUnlock, a Redis
// restart): a release to no level leaves nothing behind to tell which.
// Unlock then reports the release (nil), as it would have without the
// loss, unless this process learnt of a loss first. Fencing tokens, not
// Unlock's answer, are what keep a holder that lost its lock from writing.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.engine().unlockHandingOver(ctx)
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports whether there was a lock to delete. It applies before it returns
// or never, also when ctx ends while it is under way (it then waits, up to
// the retry timeout, to learn which), unless its error wraps
// ErrOutcomeUnknown. This Client's own holds on the lock end with
// ErrLockLost, also when that error leaves it unknown whether the lock
// was deleted. Another Client learns that its holds ended at
// its next renewal (or at a fixed lease's end); until then a Lock made
// there after the wake-up still waits behind its own Client's hold, which
// it takes for live without asking Redis.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	return m.engine().forceUnlock(ctx)
}

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

// Inspect reads the lock's state in Redis; see LockState. It is a
// diagnostic for operators, not a synchronisation primitive.
func (m *Mutex) Inspect(ctx context.Context) (LockState, error) {
	return m.engine().inspect(ctx)
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
