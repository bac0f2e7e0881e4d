package rlock

import (
	"context"
	"time"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// FairMutex is a Mutex whose waiters get the lock first come, first
// served, across processes and Clients: in the order in which their first
// waiting acquire reached Redis. Get one from Client.FairMutex.
//
// Waiters queue in Redis, beside the lock. The release that frees the lock
// hands it, in the same script, to the waiter longest in the queue: in
// the release's reply when that waiter is one of the releasing Client's
// (as a Mutex's Unlock hands over, handoff.go), else by a message
// addressed to it. Either way the waiter's Lock returns without asking
// Redis again, so a handoff takes about one round trip. A re-entry by the
// holder never queues; TryLock with wait 0 never queues and takes a free
// lock only when nobody waits for it.
//
// A queued waiter's entry has a lease of its own, which the watchdog
// renews with the holds: a waiter whose process died drops out of the
// queue within one lease (WithLeaseTime), and one that is handed the lock
// after it died holds it only for what was left of that lease. A waiter
// whose context ends, or whose TryLock wait runs out, leaves the queue,
// and hands the lock on if it was handed the lock meanwhile.
//
// Everything else is as for Mutex: ownership through the context, loss,
// fencing tokens, the watchdog, Close, one Cluster slot per lock. A
// FairMutex is a resource of its own: a Mutex or RWMutex of the same name
// neither excludes nor waits for it.
type FairMutex struct {
	l lock // not embedded: its acquire waits on the channel, FairMutex's in the queue
}

// FairMutex returns a handle on the fair lock called name, as Mutex does
// on a lock.
func (c *Client) FairMutex(name string) *FairMutex {
	return &FairMutex{l: newLock(c, name, fairKind, keys.CheckName(name), keys.NewFairRef(c.prefix(), name))}
}

// fairKind is FairMutex's: one reentrant owner at a time, handed the lock
// in the order it queued (queueWait).
var fairKind = &kind{
	name:    "fairmutex",
	acquire: lua.FairAcquire,
	release: lua.FairRelease,
	marked:  true,
}

// engine returns f's lock engine, nilLock for a nil handle (see Mutex.engine).
func (f *FairMutex) engine() *lock {
	if f == nil {
		return &nilLock
	}
	return &f.l
}

// acquire is lock.acquire with the queue's wait (fairqueue.go).
func (f *FairMutex) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	l := f.engine()
	var a acquisition
	if l.begin(&a, ctx, wait, lease) {
		l.waitInQueue(&a, wait, lease)
	}
	return l.end(&a, lease)
}

// Name returns the lock's name.
func (f *FairMutex) Name() string { return f.engine().Name() }

// Lock is Mutex.Lock, first come, first served.
func (f *FairMutex) Lock(ctx context.Context) (context.Context, error) {
	lctx, _, err := f.acquire(ctx, waitForever, 0)
	return lctx, err
}

// LockFor is Mutex.LockFor, first come, first served.
func (f *FairMutex) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := validLease(lease); err != nil {
		return ctx, f.engine().wrap(err)
	}
	lctx, _, err := f.acquire(ctx, waitForever, lease)
	return lctx, err
}

// TryLock is Mutex.TryLock, first come, first served: with wait 0 it takes
// the lock only when it is free and nobody waits for it.
func (f *FairMutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	lease, err := tryLockArgs(wait, lease)
	if err != nil {
		return ctx, false, f.engine().wrap(err)
	}
	return f.acquire(ctx, wait, lease)
}

// Unlock is Mutex.Unlock; the last level hands the lock to the waiter
// longest in the queue: in its reply, when that waiter is one of this
// Client's (handoff.go), else by a message addressed to it.
func (f *FairMutex) Unlock(ctx context.Context) error { return f.engine().unlockHandingOver(ctx) }

// ForceUnlock is Mutex.ForceUnlock. The queue stays: the waiters it wakes
// hand the lock to the one longest in it.
func (f *FairMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return f.engine().forceUnlock(ctx)
}

// IsLocked is Mutex.IsLocked.
func (f *FairMutex) IsLocked(ctx context.Context) (bool, error) { return f.engine().isLocked(ctx) }

// HoldCount is Mutex.HoldCount.
func (f *FairMutex) HoldCount(ctx context.Context) (int, error) { return f.engine().holdCount(ctx) }

// RemainingLease is Mutex.RemainingLease.
func (f *FairMutex) RemainingLease(ctx context.Context) (time.Duration, error) {
	return f.engine().remainingLease(ctx)
}

// FencingToken is Mutex.FencingToken.
func (f *FairMutex) FencingToken(ctx context.Context) (int64, bool) {
	return f.engine().fencingToken(ctx)
}

// Inspect reads the lock's state in Redis, its queue of waiters in order
// included; see LockState. It is a diagnostic for operators, not a
// synchronisation primitive.
func (f *FairMutex) Inspect(ctx context.Context) (LockState, error) {
	return f.engine().inspectAs(ctx, KindFairMutex)
}
