package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlock/rlock/pubsub"
)

// waitOnChannel retries the acquire for up to wait (waitForever: until ctx is done)
// while another owner holds the lock (a Mutex's waiter parks too:
// waitParked). It subscribes to the lock's unlock
// channel first and only then retries, so an unlock between the two cannot
// be missed; between attempts it sleeps until a wake-up or until the
// holder's lease would run out (a lock that expires publishes nothing), never
// polling while the holder is alive. It records its outcome in a, whose
// trace counts the attempts and wake-ups for the hooks: a sleeping
// waiter's frames keep no copies of it, so its stack stays under the size
// where Go gives it 8 KB rather than 4.
func (l *lock) waitOnChannel(a *acquisition, wait, lease time.Duration) {
	tag := ""
	if l.kind.marked {
		tag = l.holdID(a.o).field
	}
	w, deadline, err := l.subscribe(a.octx, wait, tag)
	if w == nil {
		a.g, a.err = grant{}, err
		return
	}
	l.retry(a, w, deadline, lease)
	// A wake-up this waiter was handed but did not turn into the lock goes
	// on to the next waiter (Done).
	if tag == "" {
		w.Done(a.g.acquired)
	} else {
		l.leaveMarked(a, w)
	}
}

// retry is waitOnChannel's loop: attempt, then sleep until w wakes, the holder's
// lease would run out, or deadline (zero: none) passes. The hold id is made
// per attempt, not kept while the waiter sleeps: a thousand sleeping
// waiters are a thousand ids less. (The attempt is a helper, and sleep is
// called from here: see waitOnChannel.)
func (l *lock) retry(a *acquisition, w *pubsub.Waiter, deadline time.Time, lease time.Duration) {
	for {
		if l.waiterAttempt(a, l.holdID(a.o), lease); a.err != nil || a.g.acquired {
			return
		}
		pause, ok := capPause(deadline, nextCheck(a.g.pttl, l.c.cfg.lease))
		if !ok {
			a.g = grant{}
			return
		}
		if a.err = sleep(a.octx, w, pause); a.err != nil {
			a.g = grant{}
			return
		}
		a.trace.wakeups++
	}
}

// waiterAttempt is a waiter's attempt for id, its outcome recorded in a
// and traced: every kind's wait makes its attempts through it.
func (l *lock) waiterAttempt(a *acquisition, id holdID, lease time.Duration) {
	a.lctx, a.g, a.err = l.attempt(a.octx, id, lease, true)
	a.trace.attempt(l, a.g, a.err, true)
}

// subscribe starts a wait of wait (waitForever: until ctx is done) on the
// lock's unlock channel, as a waiter named tag ("" for none), and returns
// the waiter and when the wait ends (the zero time: never). A nil waiter
// comes with what acquire reports: nil for a wait that ran out first.
func (r *resource) subscribe(ctx context.Context, wait time.Duration, tag string) (*pubsub.Waiter, time.Time, error) {
	deadline := waitDeadline(wait)
	sctx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	w, err := r.c.subs.SubscribeAs(sctx, r.keys.Value().Channel, tag)
	if err != nil {
		return nil, deadline, subscribeFailed(ctx, err)
	}
	return w, deadline, nil
}

// sleep waits until w wakes or pause has passed, and fails when ctx is done
// first. One channel serves messages and the time, and Close closes it too
// (the next attempt then fails with ErrClosed): each case of a select costs
// a sleeping waiter memory.
func sleep(ctx context.Context, w *pubsub.Waiter, pause time.Duration) error {
	w.WakeAfter(pause)
	select {
	case <-w.Wake():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rlock: wait: %w", doneErr(ctx))
	}
}

// nextCheck is how long a waiter sleeps, at most, before trying again when
// the holder's key has pttl left: until it expires, or one lease when it has
// no expiry (only a wake-up ends that); a key that just vanished is retried
// at once.
func nextCheck(pttl, lease time.Duration) time.Duration {
	switch {
	case pttl == -time.Millisecond: // the key has no expiry
		return lease
	case pttl <= 0:
		return 0
	}
	return pttl
}

// subscribeFailed maps a failed subscription to what acquire reports: a wait
// that ran out is no error, a done ctx or a closed Client are.
func subscribeFailed(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("rlock: wait: %w", doneErr(ctx))
	case errors.Is(err, pubsub.ErrClosed):
		return ErrClosed
	case errors.Is(err, context.DeadlineExceeded):
		return nil
	}
	return fmt.Errorf("rlock: subscribe: %w", err)
}

// waitDeadline is when a wait of wait ends: the zero time for waitForever.
func waitDeadline(wait time.Duration) time.Time {
	if wait == waitForever {
		return time.Time{}
	}
	return time.Now().Add(wait)
}

// capPause caps a waiter's pause between attempts at what is left until
// deadline (the zero time: no deadline), and reports false when nothing is
// left: the wait is over.
func capPause(deadline time.Time, pause time.Duration) (time.Duration, bool) {
	if deadline.IsZero() {
		return pause, true
	}
	left := time.Until(deadline)
	return min(pause, left), left > 0
}
