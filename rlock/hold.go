package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlock/rlock/watchdog"
)

// holdKey is the context key under which a lock context carries its hold.
type holdKey struct {
	c  *Client
	id holdID
}

// hold is what this process knows of one owner's hold on one lock: its
// fencing token, its lease, the local deadline by which a renewal must have
// been confirmed, and the context that ends when it may no longer be held.
//
// The count of re-entries lives in the owner's turn; a hold exists from the
// first acquire until the final Unlock, a loss, or Client.Close.
type hold struct {
	c     *Client
	id    holdID
	token int64
	ref   LockRef   // names the lock to the hooks
	since time.Time // when the hold began

	life *lifetime // done when the hold ends; its cause says why

	mu       sync.Mutex
	ended    bool
	deadline time.Time       // the local deadline: no other owner can take the lock before it
	watched  *watchdog.Entry // non-nil while the watchdog renews this hold
	expiry   *time.Timer     // fires at the local deadline
}

// newHold returns owner id's new hold on l, whose first level was granted
// with token.
func newHold(l *lock, id holdID, token int64) *hold {
	h := &hold{c: l.c, id: id, token: token, ref: l.ref(), since: time.Now(), life: newLifetime()}
	h.hookStart()
	return h
}

// bind returns a context derived from parent that carries h and is done when
// h ends (with h's cause), or when parent is done.
func (h *hold) bind(parent context.Context) context.Context {
	return h.life.bind(parent, holdKey{h.c, h.id}, h)
}

// carriedBy reports whether ctx already carries h.
func (h *hold) carriedBy(ctx context.Context) bool {
	carried, _ := ctx.Value(holdKey{h.c, h.id}).(*hold)
	return carried == h
}

// active reports whether h has not ended.
func (h *hold) active() bool {
	return h.life.Err() == nil
}

// record records an acquire sent at sent that made the key last at least
// lease. A hold the watchdog renews stays renewed; watch hands a fixed-lease
// hold to the watchdog. It fails when h has ended or the watchdog refuses
// it.
func (h *hold) record(sent time.Time, lease time.Duration, watch bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return context.Cause(h.life)
	}
	if watch && h.watched == nil {
		w := &watchdog.Entry{Key: h.id.key, Field: h.id.field, Renewed: h.renewed, Lost: h.lost}
		if err := h.c.dog.Add(w); err != nil {
			if errors.Is(err, watchdog.ErrClosed) {
				return ErrClosed // Close has begun: the caller matches rlock's
			}
			return fmt.Errorf("rlock: watchdog: %w", err)
		}
		h.watched = w
	}
	h.armLocked(sent, lease)
	return nil
}

// armLocked moves the local deadline to sent + lease - drift if that is
// later: Redis set that lease no earlier than sent, and no script ever
// shortens a lock's expiry, so no other owner can take the lock before the
// latest such deadline. A deadline already passed ends the hold at once.
// h.mu is held.
func (h *hold) armLocked(sent time.Time, lease time.Duration) {
	deadline := sent.Add(lease - drift(lease))
	if !deadline.After(h.deadline) {
		return
	}
	h.deadline = deadline
	if h.expiry == nil {
		h.expiry = time.AfterFunc(time.Until(deadline), h.expired)
		return
	}
	if h.expiry.Stop() {
		h.expiry.Reset(time.Until(deadline))
	}
	// Stop failing means the deadline already fired: the hold is ending.
}

// renewed records a renewal sent at sent that confirmed the hold.
func (h *hold) renewed(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ended {
		h.armLocked(sent, h.c.cfg.lease)
	}
}

// lost is the watchdog's news that a renewal found the hold gone.
func (h *hold) lost(*watchdog.Entry) {
	h.c.cfg.logger.Warn("rlock: lock lost: renewal found it gone", "key", h.id.key)
	h.finish(ErrLockLost)
}

// expired is the local deadline passing.
func (h *hold) expired() {
	h.c.cfg.logger.Warn("rlock: lock lost: lease deadline passed", "key", h.id.key)
	h.finish(errDeadlinePassed)
}

// finish ends h once: every context bound to it is done with cause, and no
// renewal is sent for it any more. Its turn keeps the count Redis confirmed:
// an Unlock after a loss still leaves what Redis may hold.
//
// The contexts end before the watchdog lets go: Remove waits for a renewal
// round in flight, up to a third of the lease, and a holder whose deadline
// passed must learn of it then, not a round later, when another owner may
// already hold the lock.
func (h *hold) finish(cause error) {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return
	}
	h.ended = true
	if h.expiry != nil {
		h.expiry.Stop()
	}
	watched := h.watched
	h.mu.Unlock()

	h.life.end(cause)
	if watched != nil {
		h.c.dog.Remove(watched)
	}
	h.hookEnd(cause, watched != nil)
}

// hookStart reports that h began.
func (h *hold) hookStart() {
	if hk := h.c.cfg.hooks; hk != nil {
		hk.HoldStart(HoldStart{LockRef: h.ref, Token: h.token})
	}
}

// hookEnd reports that h ended with cause; watched says the watchdog renewed
// it, which tells a lease that ran out from a renewal that never came.
func (h *hold) hookEnd(cause error, watched bool) {
	hk := h.c.cfg.hooks
	if hk == nil {
		return
	}
	hk.HoldEnd(HoldEnd{LockRef: h.ref, Token: h.token, Held: time.Since(h.since), Reason: endReason(cause, watched), Cause: cause})
}

// endReason names why a hold ended with cause.
func endReason(cause error, watched bool) EndReason {
	switch {
	case !errors.Is(cause, ErrLockLost):
		return EndReleased
	case errors.Is(cause, ErrClosed):
		return EndClosed
	case errors.Is(cause, errForceUnlocked):
		return EndForceUnlocked
	case errors.Is(cause, errUnlockFailed):
		return EndUnlockFailed
	case errors.Is(cause, errQuorumLost):
		return EndQuorumLost
	case errors.Is(cause, errDeadlinePassed) && watched:
		return EndDeadline
	case errors.Is(cause, errDeadlinePassed):
		return EndLeaseEnded
	}
	return EndGone
}

// drift is the allowance for clock-rate differences between this process and
// Redis over one lease: 1% of it plus 2 ms, as the Redlock algorithm sets it.
func drift(lease time.Duration) time.Duration {
	return lease/100 + 2*time.Millisecond
}

// lifetime is how long a hold lasts. It is a context, done with the hold's
// cause when the hold ends, and it ends every lock context bound to it in
// that same moment: a caller that sees the final Unlock return, or a loss
// detected, sees its lock context done. (context.AfterFunc would end them a
// goroutine later.)
type lifetime struct {
	context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	ended bool
	bound []context.CancelCauseFunc // lock contexts to end with the hold
}

func newLifetime() *lifetime {
	l := &lifetime{}
	l.Context, l.cancel = context.WithCancelCause(context.Background())
	return l
}

// bind returns a context derived from parent, carrying val under key, that
// is done when parent is or when the lifetime ends, with the lifetime's
// cause.
func (l *lifetime) bind(parent context.Context, key, val any) context.Context {
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, key, val))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		cancel(context.Cause(l))
	} else {
		l.bound = append(l.bound, cancel)
	}
	return ctx
}

// end ends the lifetime with cause, once; it reports whether this call did.
func (l *lifetime) end(cause error) bool {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return false
	}
	l.ended = true
	bound := l.bound
	l.bound = nil
	l.mu.Unlock()
	l.cancel(cause)
	for _, cancel := range bound {
		cancel(cause)
	}
	return true
}
