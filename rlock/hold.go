package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/watchdog"
)

// hold is what this process knows of one owner's hold on one lock: its
// fencing token, its lease, the local deadline by which a renewal must have
// been confirmed, and the lifetime that ends when it may no longer be held.
//
// The count of re-entries lives in the owner's turn; a hold exists from the
// first acquire until the final Unlock, a loss, or Client.Close.
type hold struct {
	l     *lock // the lock held, whose Client has the hold; the hooks are told of it
	token int64
	since time.Duration // when the hold began (alarm.Now)

	// life ends when the hold ends; its cause says why. Its mu guards the
	// fields below too (one mutex for the hold).
	life lifetime

	counted   bool // counted in its Client's lot while it lives (park.go)
	ended     bool
	watched   bool           // the watchdog renews this hold (entry is added)
	releasing bool           // a release to no level is under way (releasingAll)
	place     int32          // its place in its Client's deadlines (see Place)
	deadline  time.Duration  // the local deadline (alarm.Now): no other owner can take the lock before it
	entry     watchdog.Entry // names the hold (see id), and has it renewed once watched
}

// newHold records in turn t, whose turn the caller has, the new hold of
// its owner on l, whose first level was granted with token, and returns
// it. The hooks hear that it began first: one granted after Close ends at
// once (setHold). The hold is in the turn before its Client's lot counts
// it: a waiter of the owner that parks after the count woke the owner's
// parked waiters finds it there (parkingLot.park).
func newHold(l *lock, t *turn, token int64) *hold {
	h := &hold{l: l, token: token, since: alarm.Now()}
	h.entry = watchdog.Entry{Key: t.id.key, Field: t.id.field, Holder: h}
	h.hookStart()
	l.c.setHold(t, h)
	if l.c.lot.holding(l, t.id) {
		// Close may have ended it since it was set in the turn.
		h.life.mu.Lock()
		ended := h.ended
		h.counted = !ended
		h.life.mu.Unlock()
		if ended {
			l.c.lot.unheld(t.id.key)
		}
	}
	return h
}

// id names the hold's owner and lock (kept once, in its watchdog entry).
func (h *hold) id() holdID {
	return holdID{key: h.entry.Key, field: h.entry.Field}
}

// client returns the Client of the hold.
func (h *hold) client() *Client {
	return h.l.c
}

// A lock context (hold.bind) is its parent's values and deadline, with the
// hold it carries under boundKey, so that carried holds are found without
// a key to allocate per lookup; it is done when its parent is or when the
// hold ends, with the hold's cause. The first lock context of a hold, the
// only one most holds ever have, is the hold itself (holdNode), and makes
// its cancellation (a context.WithCancelCause of its parent, 80 B and a
// cancel func, and its entry in the parent's children) only when asked
// for it: by Done, by a context derived from it, or, once the hold ended,
// by a value lookup such as context.Cause's. A held lock whose context
// nobody watches costs none of it. A later lock context of the hold is a
// holdCtx under a context.WithCancelCause made at once.

// boundKey is the context key under which the nearest carrier of a hold
// answers: a holdNode or a holdCtx.
type boundKey struct{}

// holdCtx carries h, bound onto its Context: the parent of a hold's later
// lock context.
type holdCtx struct {
	context.Context
	h *hold
}

func (c *holdCtx) Value(key any) any {
	if key == (boundKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// nearestBound returns the hold nearest to ctx that ctx carries, and the
// context its carrier was bound onto, from which to go on outwards; a nil
// hold when ctx carries none.
func nearestBound(ctx context.Context) (*hold, context.Context) {
	switch c := ctx.Value(boundKey{}).(type) {
	case *holdNode:
		return (*hold)(c), c.life.parent
	case *holdCtx:
		return c.h, c.Context
	}
	return nil, nil
}

// carriedHold returns the hold of id in Client c that ctx carries, ended or
// not, or nil: the nearest of the holds bound into ctx that is it.
func carriedHold(ctx context.Context, c *Client, id holdID) *hold {
	for h, up := nearestBound(ctx); h != nil; h, up = nearestBound(up) {
		if h.client() == c && h.id() == id {
			return h
		}
	}
	return nil
}

// endsWith reports whether ctx ends when h does: the nearest hold of h's
// id bound into ctx is h, reached without crossing a lasting context,
// whose cancellation is not that of the holds it carries (outliving). A
// call's outliving ctx ends with no hold, nor does one that never ends (a
// lock context detached by context.WithoutCancel): its hold is bound
// anew. (One detached and then given a cancellation of its own is not
// told apart: it carries the hold, and ends with what it was given.)
func endsWith(ctx context.Context, h *hold) bool {
	if _, ok := ctx.(outlivingCtx); ok || ctx.Done() == nil {
		return false
	}
	for n, up := nearestBound(ctx); n != nil; n, up = nearestBound(up) {
		if n.client() == h.client() && n.id() == h.id() {
			return n == h
		}
		if _, ok := up.(lastingCtx); ok {
			return false
		}
	}
	return false
}

// holdNode is a hold as its first lock context, bound onto life.parent;
// life.first is its cancellation once made.
type holdNode hold

// cancellation is a lock context's cancellation, once made.
type cancellation struct {
	ctx    context.Context // a context.WithCancelCause
	cancel context.CancelCauseFunc
}

// lostFirst is the state of a holdNode whose hold ended while its parent
// was not done, before its cancellation was made: Canceled, with the
// hold's cause.
var lostFirst = new(cancellation)

func (n *holdNode) Deadline() (time.Time, bool) { return n.life.parent.Deadline() }

// Done makes the node's cancellation if it has none: of its parent, which
// ends it when done, and which the hold's end cancels; or, after a loss,
// cancelled already with the hold's cause.
func (n *holdNode) Done() <-chan struct{} {
	l := &n.life
	if c := l.first.Load(); c != nil && c != lostFirst {
		return c.ctx.Done()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.first.Load()
	switch c {
	case nil:
		// Before the end, or after it with parent done first: parent's
		// cancellation reaches it (at once if it is done).
		ctx, cancel := context.WithCancelCause(l.parent)
		c = &cancellation{ctx: ctx, cancel: cancel}
	case lostFirst:
		ctx, cancel := context.WithCancelCause(context.WithoutCancel(l.parent))
		cancel(l.cause)
		c = &cancellation{ctx: ctx, cancel: cancel}
	}
	l.first.Store(c)
	return c.ctx.Done()
}

func (n *holdNode) Err() error {
	switch c := n.life.first.Load(); c {
	case nil:
		return n.life.parent.Err()
	case lostFirst:
		return context.Canceled
	default:
		return c.ctx.Err()
	}
}

// Value answers boundKey with the node, and other keys as its parent
// does; but once the hold ended first, as its cancellation does (made
// now), which answers context.Cause with the hold's cause. An owner's
// lookup needs none.
func (n *holdNode) Value(key any) any {
	switch key.(type) {
	case boundKey:
		return n
	case ownerKey:
		return n.life.parent.Value(key)
	}
	c := n.life.first.Load()
	if c == lostFirst {
		n.Done()
		c = n.life.first.Load()
	}
	if c == nil {
		return n.life.parent.Value(key)
	}
	return c.ctx.Value(key)
}

// bind returns a lock context: derived from parent, carrying h, done when
// h ends (with h's cause) or when parent is done. The caller has h's turn.
func (h *hold) bind(parent context.Context) context.Context {
	if d, ok := parent.(outlivingCtx); ok {
		parent = d.lasting()
	}
	return h.life.bind(parent, h)
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
	h.life.mu.Lock()
	defer h.life.mu.Unlock()
	if h.ended {
		return h.life.cause
	}
	if watch && !h.watched {
		if err := h.client().dog.Add(&h.entry); err != nil {
			if errors.Is(err, watchdog.ErrClosed) {
				return ErrClosed // Close has begun: the caller matches rlock's
			}
			return fmt.Errorf("rlock: watchdog: %w", err)
		}
		h.watched = true
	}
	h.armLocked(sent, lease)
	return nil
}

// armLocked moves the local deadline to sent + lease - drift if that is
// later: Redis set that lease no earlier than sent, and no script ever
// shortens a lock's expiry, so no other owner can take the lock before the
// latest such deadline. The Client's deadlines end the hold when it
// passes (at once for one already passed). h.life.mu is held.
func (h *hold) armLocked(sent time.Time, lease time.Duration) {
	deadline := addSat(alarm.At(sent), lease-drift(lease)) // saturates for a lease of centuries
	if deadline <= h.deadline {
		return
	}
	h.deadline = deadline
	h.client().deadlines.Set(h, deadline)
}

// Renewed records a renewal sent at sent that confirmed the hold (it is
// its entry's watchdog.Holder).
func (h *hold) Renewed(sent time.Time) {
	h.life.mu.Lock()
	defer h.life.mu.Unlock()
	if !h.ended {
		h.armLocked(sent, h.client().cfg.lease)
	}
}

// Lost is the watchdog's news that a renewal found the hold gone. While a
// release to no level is under way, that release, which may be what the
// renewal found, ends the hold with what it finds.
func (h *hold) Lost(*watchdog.Entry) {
	h.life.mu.Lock()
	releasing := h.releasing
	h.life.mu.Unlock()
	if releasing {
		return
	}
	h.client().cfg.logger.Warn("rlock: lock lost: renewal found it gone", "key", h.entry.Key)
	h.finish(ErrLockLost)
}

// finish ends h once: every context bound to it is done with cause, and no
// renewal is sent for it any more. Its turn keeps the count Redis confirmed:
// an Unlock after a loss still leaves what Redis may hold.
//
// The contexts end before the watchdog lets go: Remove waits for a renewal
// round in flight, up to a sixth of the lease, and a holder whose deadline
// passed must learn of it then, not a round later, when another owner may
// already hold the lock.
func (h *hold) finish(cause error) {
	if h.end(cause) {
		h.letGo(cause)
	}
}

// end is finish's first half: it ends h's lifetime with cause, once, and
// reports whether this call did.
func (h *hold) end(cause error) bool {
	h.life.mu.Lock()
	if h.ended {
		h.life.mu.Unlock()
		return false
	}
	h.ended = true
	counted := h.counted
	h.client().deadlines.Remove(h)
	h.life.endLocked(cause) // unlocks: record and Renewed never see ended without the cause
	if counted {
		h.client().lot.unheld(h.entry.Key)
	}
	return true
}

// letGo is finish's second half, after end: no renewal is sent for h any
// more, and the hooks learn that it ended with cause.
func (h *hold) letGo(cause error) {
	h.life.mu.Lock()
	watched := h.watched // fixed once ended
	h.life.mu.Unlock()
	if watched {
		h.client().dog.Remove(&h.entry)
	}
	h.hookEnd(cause, watched)
}

// hookStart reports that h began.
func (h *hold) hookStart() {
	if hk := h.client().cfg.hooks; hk != nil {
		hk.HoldStart(HoldStart{LockRef: h.l.ref(), Token: h.token})
	}
}

// hookEnd reports that h ended with cause; watched says the watchdog renewed
// it, which tells a lease that ran out from a renewal that never came.
func (h *hold) hookEnd(cause error, watched bool) {
	hk := h.client().cfg.hooks
	if hk == nil {
		return
	}
	hk.HoldEnd(HoldEnd{LockRef: h.l.ref(), Token: h.token, Held: alarm.Now() - h.since, Reason: endReason(cause, watched), Cause: cause})
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

// lifetime is how long a hold lasts: done with the hold's cause when the
// hold ends, and ending every lock context bound to it in that same moment:
// a caller that sees the final Unlock return, or a loss detected, sees its
// lock context done. (context.AfterFunc would end them a goroutine later.)
// It is a field of what it times, and allocates nothing until asked for
// Done or bound a second time.
type lifetime struct {
	mu    sync.Mutex
	cause error         // why it ended; nil until then
	done  chan struct{} // made by the first Done; closed at the end

	// A hold's first lock context is the hold itself (holdNode): bound
	// onto parent, with first its cancellation once made. The cancel
	// funcs of later ones, and of a MultiLock's, are in more.
	parent context.Context
	first  atomic.Pointer[cancellation]
	more   *[]context.CancelCauseFunc
}

// Done returns a channel closed when the lifetime ends.
func (l *lifetime) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.cause != nil {
			close(l.done)
		}
	}
	return l.done
}

// Err is context.Canceled once the lifetime ended, nil before.
func (l *lifetime) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cause != nil {
		return context.Canceled
	}
	return nil
}

// Cause is the cause the lifetime ended with, nil before.
func (l *lifetime) Cause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// bind returns a context derived from parent, carrying h (nil: nothing,
// for a MultiLock, whose parent carries it), that is done when parent is
// or when the lifetime ends, with the lifetime's cause: h itself for its
// first, while it lives.
func (l *lifetime) bind(parent context.Context, h *hold) context.Context {
	if h != nil {
		l.mu.Lock()
		first := l.parent == nil && l.cause == nil
		if first {
			l.parent = parent
		}
		l.mu.Unlock()
		if first {
			return (*holdNode)(h)
		}
		parent = &holdCtx{Context: parent, h: h}
	}
	ctx, cancel := context.WithCancelCause(parent)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.cause != nil:
		cancel(l.cause)
	case l.more == nil:
		l.more = &[]context.CancelCauseFunc{cancel}
	default:
		*l.more = append(*l.more, cancel)
	}
	return ctx
}

// end ends the lifetime with cause (context.Canceled for nil), once; it
// reports whether this call did.
func (l *lifetime) end(cause error) bool {
	l.mu.Lock()
	return l.endLocked(cause)
}

// endLocked is end for a caller that holds l.mu, which it unlocks: a hold
// ends its lifetime in the critical section that marks it ended, so that
// nothing reading the mark under l.mu finds it ended with no cause yet.
func (l *lifetime) endLocked(cause error) bool {
	if cause == nil {
		cause = context.Canceled
	}
	if l.cause != nil {
		l.mu.Unlock()
		return false
	}
	l.cause = cause
	if l.done != nil {
		close(l.done)
	}
	// The first lock context, if its cancellation is not made, ends now
	// unless its parent ended first (it is then done as its parent is).
	first := l.first.Load()
	if l.parent != nil && first == nil && l.parent.Err() == nil {
		l.first.Store(lostFirst)
	}
	more := l.more
	l.more = nil
	l.mu.Unlock()
	if first != nil {
		first.cancel(cause)
	}
	if more != nil {
		for _, cancel := range *more {
			cancel(cause)
		}
	}
	return true
}
