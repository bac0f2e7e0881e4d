package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// RWMutex is a reentrant read-write lock shared through Redis, like
// Redisson's RReadWriteLock: many owners may hold the read lock at once,
// the write lock excludes every other owner, readers included. Get one
// from Client.RWMutex.
//
// Ownership travels in the context as for Mutex: RLock and Lock return a
// context carrying the owner, and calls made with it re-enter. The write
// holder may also take the read lock, and keeps it after Unlock (a
// downgrade: Lock, RLock, Unlock leaves it reading); a reader asking for
// the write lock gets ErrUpgrade at once.
//
// Neither side starves: once a writer waits, new readers wait behind it,
// and only readers already holding may re-enter; and a write Unlock lets
// in the readers that were waiting for it ahead of the writers waiting
// then (phase-fair, like Go's sync.RWMutex). Every hold, read or write, has
// a lease of its own, which the watchdog renews in its rounds: a holder
// whose process died stops holding within its lease, however long other
// readers keep renewing theirs. Waiters sleep on the lock's channel: a
// write Unlock wakes readers and writers, the last RUnlock wakes writers.
//
// As with Mutex, a hold can be lost before its unlock: watch the context
// that RLock or Lock returned, done with cause ErrLockLost.
//
// An RWMutex is a resource of its own: a Mutex, FairMutex, Semaphore or
// CountDownLatch of the same name neither excludes nor waits for it (see
// "One name, one resource per kind" in the package doc).
type RWMutex struct {
	read, write lock
}

// The two kinds of hold of an RWMutex, on one hash: an owner's read and
// write holds are two fields, two turns and two holds.
var (
	readKind = &kind{
		name:    "rwmutex.read",
		acquire: lua.RWReadAcquire,
		release: lua.RWReadRelease,
		suffix:  ":r",
		marked:  true,
	}
	writeKind = &kind{
		name:    "rwmutex.write",
		acquire: lua.RWWriteAcquire,
		release: lua.RWWriteRelease,
		suffix:  ":w",
		marked:  true,
	}
)

// RWMutex returns a handle on the read-write lock called name. Handles are
// cheap and safe for concurrent use; as for Mutex, only the empty name is
// invalid, reported by the handle's first call.
func (c *Client) RWMutex(name string) *RWMutex {
	invalid, ks := keys.CheckName(name), keys.NewRWRef(c.prefix(), name)
	return &RWMutex{
		read:  newLock(c, name, readKind, invalid, ks),
		write: newLock(c, name, writeKind, invalid, ks),
	}
}

// readLock and writeLock return rw's engines, nilLock for a nil handle: their
// methods answer ErrNilClient then.
func (rw *RWMutex) readLock() *lock {
	if rw == nil {
		return &nilLock
	}
	return &rw.read
}

func (rw *RWMutex) writeLock() *lock {
	if rw == nil {
		return &nilLock
	}
	return &rw.write
}

// Name returns the lock's name.
func (rw *RWMutex) Name() string {
	return rw.readLock().Name()
}

// RLock waits until no other owner holds the write lock and no writer
// waits (unless ctx's owner reads already: it re-enters), takes the read
// lock, and returns a context carrying the owner. The watchdog renews it
// until the final RUnlock. Errors are Mutex.Lock's.
//
// Called with the context of this lock's write hold, RLock takes the read
// lock beside it (a downgrade), and the context it returns outlives the
// write hold: it keeps ctx's values and is done when the read hold ends or
// when the context the owner began with is done.
func (rw *RWMutex) RLock(ctx context.Context) (context.Context, error) {
	lctx, _, err := rw.rlock(ctx, waitForever, 0)
	return lctx, err
}

// RLockFor is RLock with a fixed lease, as Mutex.LockFor: no watchdog
// renews the read hold, and the returned context is done with cause
// ErrLockLost when the lease runs out.
func (rw *RWMutex) RLockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := validLease(lease); err != nil {
		return ctx, rw.readLock().wrap(err)
	}
	lctx, _, err := rw.rlock(ctx, waitForever, lease)
	return lctx, err
}

// TryRLock is RLock with Mutex.TryLock's wait and lease: it tries for up
// to wait (0: once), and a lease > 0 is fixed, not renewed. When the read
// lock could not be taken in time it returns ctx unchanged, false and nil.
func (rw *RWMutex) TryRLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	lease, err := tryLockArgs(wait, lease)
	if err != nil {
		return ctx, false, rw.readLock().wrap(err)
	}
	return rw.rlock(ctx, wait, lease)
}

// RUnlock leaves one level of ctx's owner's read hold; see Mutex.Unlock.
// The last read hold to go wakes the waiting writers.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	return rw.readLock().unlock(ctx)
}

// Lock waits until no other owner holds the lock, read or write, takes
// the write lock, and returns a context carrying the owner. While it
// waits, new readers wait too. It returns ErrUpgrade at once when ctx's
// owner holds the read lock but not the write lock; other errors are
// Mutex.Lock's.
func (rw *RWMutex) Lock(ctx context.Context) (context.Context, error) {
	lctx, _, err := rw.lock(ctx, waitForever, 0)
	return lctx, err
}

// LockFor is Lock with a fixed lease, as Mutex.LockFor.
func (rw *RWMutex) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := validLease(lease); err != nil {
		return ctx, rw.writeLock().wrap(err)
	}
	lctx, _, err := rw.lock(ctx, waitForever, lease)
	return lctx, err
}

// TryLock is Lock with Mutex.TryLock's wait and lease. When the write lock
// could not be taken in time it returns ctx unchanged, false and nil, and
// the readers it held back meanwhile may read again.
func (rw *RWMutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	lease, err := tryLockArgs(wait, lease)
	if err != nil {
		return ctx, false, rw.writeLock().wrap(err)
	}
	return rw.lock(ctx, wait, lease)
}

// Unlock leaves one level of ctx's owner's write hold; see Mutex.Unlock.
// The last level wakes every waiter: readers may all read now.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	return rw.writeLock().unlock(ctx)
}

// ForceUnlock deletes the lock, every read and write hold on it, whoever
// holds them, and wakes every waiter. It reports whether there was a lock
// to delete. This Client's own holds on the lock end with ErrLockLost.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return rw.writeLock().forceUnlock(ctx)
}

// rlock takes the read lock for ctx's owner, waiting up to wait. A reader
// that stops waiting without it takes its waiting mark, or its admission,
// back, when no other call of its owner waits (waitOnChannel).
func (rw *RWMutex) rlock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	r := rw.readLock()
	if err := r.check(ctx); err != nil {
		return ctx, false, r.wrap(err)
	}
	parent := ctx
	if _, writing := rw.write.carried(ctx); writing {
		parent = outliving(ctx)
	}
	lctx, ok, err := r.acquire(parent, wait, lease)
	if !ok {
		return ctx, false, err
	}
	return lctx, true, nil
}

// lock takes the write lock for ctx's owner, waiting up to wait. A writer
// that stops waiting without it takes its waiting mark back, when no other
// call of its owner waits (waitOnChannel), so that the readers it held
// back need not wait for the mark's lease.
func (rw *RWMutex) lock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	w := rw.writeLock()
	if err := w.check(ctx); err != nil {
		return ctx, false, w.wrap(err)
	}
	octx, o := withOwner(ctx)
	if err := rw.upgrading(octx, o); err != nil {
		return ctx, false, w.wrap(err)
	}
	lctx, ok, err := w.acquire(octx, wait, lease)
	if !ok {
		return ctx, false, err
	}
	return lctx, true, nil
}

// upgrading returns ErrUpgrade when owner o holds rw's read lock and not
// its write lock: a write acquire would wait for o itself. Only live holds
// count: a write hold that was lost beside a read hold (a downgrade whose
// write lease ran out) no longer lets o write.
func (rw *RWMutex) upgrading(ctx context.Context, o *owner) error {
	reads, err := rw.read.c.liveLevels(ctx, rw.read.holdID(o))
	if err != nil || reads == 0 {
		return err
	}
	writes, err := rw.write.c.liveLevels(ctx, rw.write.holdID(o))
	if err != nil || writes > 0 {
		return err
	}
	return fmt.Errorf("%w: the owner holds %d read levels", ErrUpgrade, reads)
}
