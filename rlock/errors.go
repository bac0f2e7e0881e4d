package rlock

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap them with %w (a
// Mutex's errors add the lock's name); test for them with errors.Is.
var (
	// ErrNotHeld means the calling owner does not hold the lock: it never
	// took it, already released it, or its lease ran out.
	ErrNotHeld = errors.New("rlock: not held")

	// ErrLockLost is the cause (see context.Cause), or is wrapped by the
	// cause, of a lock context that is done because the lock may no longer
	// be held: a renewal found it gone, a Lock of the same owner found it
	// gone and took it afresh, the lease deadline passed without a renewal,
	// a fixed lease ran out, or ForceUnlock, a failed Unlock or
	// Client.Close ended the hold. Match it with errors.Is.
	ErrLockLost = errors.New("rlock: lock lost")

	// ErrClosed is returned by every call made after Client.Close, and by
	// calls that were waiting when Close ran.
	ErrClosed = errors.New("rlock: client closed")

	// ErrNotReplicated is returned, with WithReplicaAck, by an acquire that
	// fewer replicas acknowledged in time than asked; the lock was given
	// back.
	ErrNotReplicated = errors.New("rlock: acquire not acknowledged by replicas")

	// ErrNilClient is returned for a nil rueidis client, or a Mutex or Client
	// that was never built by New.
	ErrNilClient = errors.New("rlock: nil client")

	// ErrNilContext is returned when a method is given a nil context.
	ErrNilContext = errors.New("rlock: nil context")

	// ErrInvalidName is returned for a name that cannot name a lock, such as
	// the empty name. It matches ErrInvalidArgument too.
	ErrInvalidName error = invalid("rlock: invalid lock name")

	// ErrInvalidArgument is returned for every argument that cannot work:
	// every option's bad value (a nil logger, a negative replica count, a
	// key prefix with a brace, a lease below MinLease), a MultiLock of no
	// mutexes, a nil one, or two from one Client on one lock; and, through
	// ErrInvalidName and ErrInvalidDuration, which match it, bad names and
	// durations.
	ErrInvalidArgument = errors.New("rlock: invalid argument")

	// ErrUpgrade is returned at once by RWMutex.Lock and TryLock when the
	// calling owner holds the read lock but not the write lock: it would
	// wait for itself forever. RUnlock first (Go's sync.RWMutex and
	// Redisson's RReadWriteLock do not upgrade either).
	ErrUpgrade = errors.New("rlock: write lock asked by a read holder (upgrade)")

	// ErrInvalidDuration is returned for a negative wait, or a lease or
	// option duration out of range. It matches ErrInvalidArgument too.
	ErrInvalidDuration error = invalid("rlock: invalid duration")

	// ErrOutcomeUnknown is wrapped by the error of a request that failed
	// with a reply lost (it may have run in Redis) and whose settling call
	// got no answer either: Redis stayed unreachable, or the replies lost,
	// for the whole retry timeout. A copy of the request may then still
	// apply. A Lock's or an Acquire's hold would end with its lease, an
	// AcquirePermit's permit with its own; a CountDown's count stays, and
	// so does what a write that runs once did (ForceUnlock, TrySetPermits,
	// AddPermits, ExtendPermit, TrySetCount). Every other error of these
	// calls means the request did not apply, and will not. The error
	// wraps the request's own (ctx.Err() when ctx ended) and the settling
	// call's.
	ErrOutcomeUnknown = errors.New("rlock: outcome unknown")
)

// invalid is a kind of bad argument: an error of its own that errors.Is
// also matches to ErrInvalidArgument, so that one test catches every bad
// argument and a finer one says which.
type invalid string

func (e invalid) Error() string { return string(e) }

// Is reports whether target is ErrInvalidArgument.
func (e invalid) Is(target error) bool { return target == ErrInvalidArgument }

// Why a hold ends: every cause its lock contexts may end with
// (context.Cause), in one place. context.Canceled is the final unlock;
// ErrLockLost itself, a renewal, a release or an acquire that found the
// hold gone in Redis; each other one matches ErrLockLost and says more.
// The hooks name each with an EndReason (endReason in hooks.go).
var (
	// errDeadlinePassed: the local lease deadline passed before a renewal
	// confirmed the hold (a fixed lease ran out, or renewals failed).
	errDeadlinePassed = fmt.Errorf("%w: lease deadline passed without renewal", ErrLockLost)
	// errForceUnlocked: this Client's ForceUnlock deleted the lock.
	errForceUnlocked = fmt.Errorf("%w: force-unlocked", ErrLockLost)
	// errUnlockFailed: the Unlock's request failed; the lease frees it.
	errUnlockFailed = fmt.Errorf("%w: unlock failed", ErrLockLost)
	// errQuorumLost: fewer parts of a MultiLock than its quorum are held.
	errQuorumLost = fmt.Errorf("%w: fewer nodes than the quorum hold it", ErrLockLost)
	// errQuorumClosed: Client.Close ended parts of a MultiLock, and fewer
	// than its quorum are left.
	errQuorumClosed = fmt.Errorf("%w: %w", errQuorumLost, ErrClosed)
	// errHoldClosed: Client.Close ended the hold.
	errHoldClosed = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)
)

// errSharedPart is a MultiLock's Lock by an owner that holds one of its
// nodes already, not through this MultiLock's hold (tryQuorum).
var errSharedPart = fmt.Errorf("%w: the owner holds a node of the multilock already (a lock of its own, or another hold of a multilock over it): lock with the context that carries the multilock's hold to re-enter it, or with another owner", ErrInvalidArgument)
