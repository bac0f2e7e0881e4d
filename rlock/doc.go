// Package rlock is a Redisson-style distributed lock for Go on Redis,
// through github.com/redis/rueidis.
//
// A Mutex is reentrant: each lock is a Redis hash whose fields,
// <clientID>:<ownerToken>, count one owner's re-entries. Taking, leaving and
// renewing a lock are single Lua scripts, so each is atomic and costs one
// round trip.
//
// # Ownership travels in the context
//
// Go has no thread identity, so the owner of a hold is carried by the context
// that Lock returns. Shadowing ctx is the idiom:
//
//	ctx, err := mu.Lock(ctx) // ctx now carries this owner
//	if err != nil {
//		return err
//	}
//	defer mu.Unlock(ctx)
//	helper(ctx) // helper may call mu.Lock(ctx) again: it re-enters
//
// Calls made with that context, or any context derived from it, act for the
// same owner, from whatever goroutine. Calling Lock twice with a context that
// carries no owner (the parent context, say) is two owners: the second call
// waits, as a second thread would in Java. The same owner is used for every
// lock taken down one context chain.
//
// # Leases, the watchdog, and losing a lock
//
// Lock, and TryLock with no lease, hand the lock to the Client's watchdog,
// which renews it every lease/3 (DefaultLeaseTime 30 s) until the final
// Unlock. LockFor and TryLock with a lease set a fixed lease that nothing
// renews.
//
// It is NOT safe to assume a lock is held until Unlock. The context that
// Lock returns is done, with context.Cause ErrLockLost, when the lock may no
// longer be held: a renewal found it gone, no renewal succeeded before the
// local deadline, or a fixed lease ran out. The local deadline is taken from
// when each request was sent, less a clock-drift allowance, so the context is
// done no later than the moment another owner could take the lock. For
// writes that must never come from a stale holder, use FencingToken.
//
// That promise holds while Redis keeps what it acknowledged. A Redis that
// restarts empty (no persistence) sooner than one lease after a crash, or a
// failover to a replica that had not received the lock, frees the lock at
// once, and the old holder learns of it only at its next renewal, up to a
// third of the lease later. Restart Redis no sooner than one lease after it
// stopped, or run it with appendfsync always; against failovers, use
// WithReplicaAck. Fencing tokens keep increasing across an empty restart
// (the counter is re-seeded from the server clock), so a fenced store still
// turns the old holder away.
//
// # Waiting
//
// A waiter subscribes to the lock's unlock channel and sleeps until an unlock
// wakes it or the holder's lease would run out; it does not poll.
//
// # Redis
//
// The scripts need Redis 7 or later. On a Cluster, all keys of one lock share
// a hash tag, and unlock notifications use sharded pub/sub.
package rlock
