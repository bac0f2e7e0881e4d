package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/rlock/rlock/lua"
)

// rwState is what a read-write lock's hash holds now (rw_state.lua).
type rwState struct {
	write     bool          // some owner holds the write lock
	readers   int           // owners holding the read lock
	remaining time.Duration // until the last hold ends if nobody renews it
	reads     int           // the asking owner's read count
	writes    int           // the asking owner's write count
}

// IsLocked reports whether any owner holds the lock, read or write.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) {
	st, err := rw.state(ctx)
	return st.write || st.readers > 0, err
}

// IsWriteLocked reports whether an owner holds the write lock.
func (rw *RWMutex) IsWriteLocked(ctx context.Context) (bool, error) {
	st, err := rw.state(ctx)
	return st.write, err
}

// ReadHolders returns how many owners hold the read lock.
func (rw *RWMutex) ReadHolders(ctx context.Context) (int, error) {
	st, err := rw.state(ctx)
	return st.readers, err
}

// HoldCount returns how many times ctx's owner holds the write lock: 0
// when it does not. Like Mutex.HoldCount it answers for a done context.
func (rw *RWMutex) HoldCount(ctx context.Context) (int, error) {
	st, err := rw.state(ctx)
	return st.writes, err
}

// RHoldCount returns how many times ctx's owner holds the read lock: 0
// when it does not. It answers for a done context too.
func (rw *RWMutex) RHoldCount(ctx context.Context) (int, error) {
	st, err := rw.state(ctx)
	return st.reads, err
}

// RemainingLease returns how long the lock stays held if no holder renews
// or releases: until the latest lease among its live holds ends, read or
// write; 0 when nobody holds it.
func (rw *RWMutex) RemainingLease(ctx context.Context) (time.Duration, error) {
	st, err := rw.state(ctx)
	return st.remaining, err
}

// FencingToken returns the fencing token of the hold on this lock that ctx
// carries, write or else read, and false when ctx carries neither. A write
// hold's token is new, above every earlier one. A read hold's token is the
// token of the latest write hold granted before it: readers only hold
// while nobody writes, so a store that has accepted a write with a higher
// token knows that a reader showing a lower one is no longer protected
// (its hold was lost, and a writer came) and can refuse to serve it. The
// write holder's own read hold has its write token.
func (rw *RWMutex) FencingToken(ctx context.Context) (int64, bool) {
	if token, ok := rw.writeLock().fencingToken(ctx); ok {
		return token, true
	}
	return rw.readLock().fencingToken(ctx)
}

// state reads the lock's holds and ctx's owner's counts in one script
// call. Like the hold counts of Mutex, it answers for a done context that
// carries an owner, bounded by the retry timeout.
func (rw *RWMutex) state(ctx context.Context) (rwState, error) {
	l := rw.readLock()
	if err := l.check(ctx); err != nil {
		return rwState{}, l.wrap(err)
	}
	field := ""
	if o, ok := ownerFrom(ctx); ok {
		field = l.c.field(o)
		var cancel context.CancelFunc
		ctx, cancel = l.c.detached(ctx)
		defer cancel()
	}
	reply, err := lua.RWState.Exec(ctx, l.c.rc, []string{l.keys.Hash()}, []string{field}).AsIntSlice()
	if err != nil {
		return rwState{}, l.wrap(fmt.Errorf("rlock: read-write state: %w", err))
	}
	if len(reply) != 5 {
		return rwState{}, l.wrap(fmt.Errorf("rlock: unexpected read-write state %v", reply))
	}
	return rwState{
		write: reply[0] == 1, readers: int(reply[1]), remaining: fromMillis(reply[2]),
		reads: int(reply[3]), writes: int(reply[4]),
	}, nil
}

// Inspect reads the lock's state in Redis: its read and write holders
// (fields ending in ":r" and ":w") and its waiting writers and readers; see
// LockState. It is a diagnostic for operators, not a synchronisation
// primitive.
func (rw *RWMutex) Inspect(ctx context.Context) (LockState, error) {
	return rw.readLock().inspectAs(ctx, KindRWMutex)
}
