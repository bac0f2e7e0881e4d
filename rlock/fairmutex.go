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
// hands it, in the same script, to the waiter longest in the queue, and
// tells that waiter by a message addressed to it: the waiter's Lock
// returns without asking Redis again, so a handoff takes about one pub/sub
// delivery. A re-entry by the holder never queues; TryLock with wait 0
// never queues and takes a free lock only when nobody waits for it.
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
// FairMutex and a Mutex of the same name are the same lock in Redis; a
// Mutex that takes it passes the queue by, so do not mix them.
type FairMutex struct {
	m Mutex
}

// FairMutex returns a handle on the fair lock called name, as Mutex does
// on a lock.
func (c *Client) FairMutex(name string) *FairMutex {
	l := newLock(c, name, fairKind, keys.CheckName(name), func(prefix string) keys.Keys { return keys.New(prefix, name) })
	return &FairMutex{Mutex{l}}
}

// fairKind is FairMutex's: one reentrant owner at a time, handed the lock
// in the order it queued.
var fairKind = &kind{
	name:        "fairmutex",
	acquire:     lua.FairAcquire,
	release:     lua.FairRelease,
	acquireMore: fairAcquireMore,
	releaseMore: fairReleaseMore,
	wait:        fairWait,
}

// fairAcquireMore is what fair_acquire.lua takes after acquire.lua's KEYS
// and ARGV, for an acquire that sets the lease set.
func fairAcquireMore(l *lock, set time.Duration) (keys, args []string) {
	watched := "0"
	if set == l.c.cfg.lease {
		watched = "1"
	}
	return []string{l.keys.Value().Queue, l.keys.Value().Channel}, []string{l.c.publish, l.c.leaseMs, watched}
}

// fairReleaseMore is what fair_release.lua takes after release.lua's KEYS.
func fairReleaseMore(l *lock) []string {
	return []string{l.keys.Value().Token, l.keys.Value().Queue}
}

// mutex returns the Mutex that f runs on, nil for a nil handle: its
// methods answer ErrNilClient then.
func (f *FairMutex) mutex() *Mutex {
	if f == nil {
		return nil
	}
	return &f.m
}

// Name returns the lock's name.
func (f *FairMutex) Name() string { return f.mutex().Name() }

// Lock is Mutex.Lock, first come, first served.
func (f *FairMutex) Lock(ctx context.Context) (context.Context, error) {
	return f.mutex().Lock(ctx)
}

// LockFor is Mutex.LockFor, first come, first served.
func (f *FairMutex) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	return f.mutex().LockFor(ctx, lease)
}

// TryLock is Mutex.TryLock, first come, first served: with wait 0 it takes
// the lock only when it is free and nobody waits for it.
func (f *FairMutex) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	return f.mutex().TryLock(ctx, wait, lease)
}

// Unlock is Mutex.Unlock; the last level hands the lock to the waiter
// longest in the queue.
func (f *FairMutex) Unlock(ctx context.Context) error { return f.mutex().Unlock(ctx) }

// ForceUnlock is Mutex.ForceUnlock. The queue stays: the waiters it wakes
// hand the lock to the one longest in it.
func (f *FairMutex) ForceUnlock(ctx context.Context) (bool, error) {
	return f.mutex().ForceUnlock(ctx)
}

// IsLocked is Mutex.IsLocked.
func (f *FairMutex) IsLocked(ctx context.Context) (bool, error) { return f.mutex().IsLocked(ctx) }

// HoldCount is Mutex.HoldCount.
func (f *FairMutex) HoldCount(ctx context.Context) (int, error) { return f.mutex().HoldCount(ctx) }

// RemainingLease is Mutex.RemainingLease.
func (f *FairMutex) RemainingLease(ctx context.Context) (time.Duration, error) {
	return f.mutex().RemainingLease(ctx)
}

// FencingToken is Mutex.FencingToken.
func (f *FairMutex) FencingToken(ctx context.Context) (int64, bool) {
	return f.mutex().FencingToken(ctx)
}
