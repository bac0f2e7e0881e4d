package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// Semaphore is a counting semaphore shared through Redis, whose permits are
// held like locks: a permit has a lease, the watchdog renews it (or a fixed
// lease ends it), and the permits of a process that died come back when
// their lease runs out. Get one from Client.Semaphore; set its permits once
// with TrySetPermits, or change them with AddPermits.
//
// Acquire returns a context that carries the permit, as Mutex.Lock returns
// one that carries the lock: it is done, with cause ErrLockLost, when the
// permit may be lost. One context may carry several permits of one
// semaphore: each Acquire with it takes one more, and each Release with it
// gives one back. Release with a context that carries no permit of the
// semaphore returns ErrNotHeld.
//
// Waiters sleep on the semaphore's channel and are woken when permits come
// back (a Release, AddPermits, TrySetPermits, or an owner's Acquire that
// lets go of what its ended hold left, as after a failed Release), or
// when the earliest holder's lease would run out; they never poll.
type Semaphore struct {
	lock
}

// semaphoreKind is Semaphore's: an owner's hold is the permits it has, with
// a lease of its own beside its peers'.
var semaphoreKind = &kind{
	name:     "semaphore",
	acquire:  lua.SemaphoreAcquire,
	release:  lua.SemaphoreRelease,
	rationed: true,
}

// Semaphore returns a handle on the semaphore called name. Handles are
// cheap and safe for concurrent use; a semaphore never shares a key with
// the Mutex or CountDownLatch of the same name. Only the empty name is
// invalid; it is reported by the handle's first call.
func (c *Client) Semaphore(name string) *Semaphore {
	return &Semaphore{newLock(c, name, semaphoreKind, keys.CheckName(name), keys.NewSemaphoreRef(c.prefix(), name))}
}

// engine returns s's lock engine, nilLock for a nil handle (see Mutex.engine).
func (s *Semaphore) engine() *lock {
	if s == nil {
		return &nilLock
	}
	return &s.lock
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string {
	return s.engine().Name()
}

// Acquire waits until a permit is free, takes it, and returns a context
// that carries it (one more, when ctx carries permits already). The
// watchdog renews the permit's lease until Release. Acquire returns an
// error when ctx is done first (wrapping ctx.Err()), when Redis fails, or
// after Close.
func (s *Semaphore) Acquire(ctx context.Context) (context.Context, error) {
	pctx, _, err := s.engine().acquire(ctx, waitForever, 0)
	return pctx, err
}

// AcquireFor is Acquire with a fixed lease, as Mutex.LockFor: no watchdog
// renews the permit, which comes back by itself when the lease runs out,
// and the returned context is done with cause ErrLockLost then.
func (s *Semaphore) AcquireFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := validLease(lease); err != nil {
		return ctx, s.engine().wrap(err)
	}
	pctx, _, err := s.engine().acquire(ctx, waitForever, lease)
	return pctx, err
}

// TryAcquire tries to take a permit for up to wait (0: a single attempt)
// and reports whether it did. lease > 0 is a fixed lease, not renewed,
// after which the permit comes back by itself and the context is done with
// cause ErrLockLost; lease <= 0 hands the permit to the watchdog. When no
// permit could be taken in time it returns ctx unchanged, false and nil.
func (s *Semaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	lease, err := tryLockArgs(wait, lease)
	if err != nil {
		return ctx, false, s.engine().wrap(err)
	}
	return s.engine().acquire(ctx, wait, lease)
}

// Release gives back one permit that ctx carries; the last one ends the
// context. It returns ErrNotHeld when ctx carries no permit of the
// semaphore (also when its lease ran out). Like Mutex.Unlock, it runs even
// when ctx is already done, bounded by the retry timeout.
func (s *Semaphore) Release(ctx context.Context) error {
	return s.engine().unlock(ctx)
}

// HoldCount returns how many permits ctx's owner holds: 0 when it holds
// none. Like Release, it answers for a context that is already done.
func (s *Semaphore) HoldCount(ctx context.Context) (int, error) {
	return s.engine().holdCount(ctx)
}

// ForceRelease gives back every permit, whoever holds it, and wakes every
// waiter; the number of permits stays. It reports whether any permit was
// out. This Client's own permits end with ErrLockLost; holders on other
// Clients learn of it at their next renewal. Like Mutex.ForceUnlock, it is
// a tool for operators, not for holders.
func (s *Semaphore) ForceRelease(ctx context.Context) (bool, error) {
	return s.engine().forceUnlock(ctx)
}

// TrySetPermits sets the number of permits to n, from 1 to MaxCount, when
// it was never set, and reports whether it did. It wakes every waiter.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int) (bool, error) {
	if err := checkCount("permits", n, 1); err != nil {
		return false, s.engine().wrap(err)
	}
	set, err := s.permits(ctx, "set", n)
	return set == 1, err
}

// AddPermits adds n permits, or takes -n away when n < 0 (the semaphore may
// then have fewer permits than are held: Available is negative until
// enough are released). Permits added wake every waiter. When the permits
// would leave the range -MaxCount to MaxCount, it fails with
// ErrInvalidArgument and changes nothing.
//
// Like TrySetPermits, it runs once: it applies before it returns or
// never, even when ctx ends while it is under way, unless its error wraps
// ErrOutcomeUnknown (Redis out of reach for the retry timeout).
func (s *Semaphore) AddPermits(ctx context.Context, n int) error {
	if err := checkCount("permits added", n, -MaxCount); err != nil {
		return s.engine().wrap(err)
	}
	_, err := s.permits(ctx, "add", n)
	return err
}

// permits runs the permits script in mode with n.
func (s *Semaphore) permits(ctx context.Context, mode string, n int) (int64, error) {
	l := s.engine()
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	k := l.keys.Value()
	reply, err := l.once(ctx, lua.SemaphorePermits, k.Fence, []string{k.Token, k.Channel}, []string{mode, strconv.Itoa(n), l.c.publish, maxCountArg})
	switch {
	case errors.Is(err, errNoAnswer):
		return 0, l.wrap(fmt.Errorf("%w: %d permits more would leave the range -MaxCount to MaxCount", ErrInvalidArgument, n))
	case err != nil:
		return 0, l.wrap(fmt.Errorf("rlock: semaphore permits: %w", err))
	}
	return reply, nil
}

// Available returns how many permits are free: the permits minus those
// held by live holders. It is below 0 while more are held than there are
// (after AddPermits with n < 0).
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	l := s.engine()
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	k := l.keys.Value()
	n, err := lua.SemaphoreAvailable.Exec(ctx, l.c.rc, []string{k.Hash, k.Token}, nil).AsIntSlice()
	switch {
	case err != nil:
		return 0, l.wrap(fmt.Errorf("rlock: semaphore available: %w", err))
	case len(n) != 2:
		return 0, l.wrap(fmt.Errorf("rlock: unexpected semaphore available reply %v", n))
	}
	return int(n[0] - n[1]), nil // permits less held, in Go: Lua's numbers are not exact below -2^53
}

// Inspect reads the semaphore's state in Redis: its permits, those free,
// and each holder's; see LockState. It is a diagnostic for operators, not
// a synchronisation primitive.
func (s *Semaphore) Inspect(ctx context.Context) (LockState, error) {
	return s.engine().inspectAs(ctx, KindSemaphore)
}
