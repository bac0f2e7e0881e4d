package rlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/pubsub"
)

// released is the release script's answer.
type released int64

const (
	notHeld   = released(lua.NotHeld)   // the owner did not hold the lock
	stillHeld = released(lua.StillHeld) // levels remain
	freed     = released(lua.Freed)     // no level left: the lock is free
)

// Every way back to a lower hold count goes through release, one request
// in the owner's turn: unlock (one level, for the caller), giveBack (clean
// up a level that cannot be kept, under a detached context), settle (take
// back what a request whose reply was lost may have done) and withdraw (a
// waiter that stops waiting takes back its marks or its place).

// unlock leaves one level of the hold of l's kind that ctx's owner has,
// even when ctx is done (bounded by the retry timeout); see Mutex.Unlock.
func (l *lock) unlock(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	t := l.traceRelease(ctx)
	err := l.unlockLevel(ctx, &t)
	t.end(l, err)
	return err
}

// unlockLevel is unlock's request, reported to tr.
func (l *lock) unlockLevel(ctx context.Context, tr *releaseTrace) error {
	t, uctx, cancel, err := l.unlockTurn(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer l.c.give(t)
	result, err := l.release(uctx, t, t.count-1, false)
	return l.unlocked(t, tr, result, err)
}

// unlockTurn takes the turn of the hold that ctx's owner has on l, for an
// Unlock, under a context detached from ctx (bounded by the retry
// timeout), which the caller cancels after giving the turn back. An owner
// that holds no level gets ErrNotHeld, once whatever an acquire whose
// reply was lost may have done is settled; so does a ctx that carries an
// earlier hold of the owner than the turn's: that hold ended (its final
// Unlock, or a loss that a Lock answered afresh revealed), and the levels
// the turn counts are a later hold's, not ctx's to leave.
func (l *lock) unlockTurn(ctx context.Context) (*turn, context.Context, context.CancelFunc, error) {
	o, ok := ownerFrom(ctx)
	if !ok {
		return nil, nil, nil, l.wrap(ErrNotHeld)
	}
	uctx, cancel := l.c.detached(ctx)
	id, carried := l.boundHold(ctx, o)
	t, err := l.c.take(uctx, id)
	if err != nil {
		cancel()
		// Another call of the owner kept the turn: the hold ends as after
		// a failed release (unlocked), so that nothing renews a level
		// that this Unlock could not leave.
		if carried == nil {
			carried = l.c.liveHold(id)
		}
		err = fmt.Errorf("rlock: release: %w", err)
		if carried != nil {
			carried.finish(fmt.Errorf("%w: %w", errUnlockFailed, err))
		}
		return nil, nil, nil, l.wrap(err)
	}
	switch {
	case t.count == 0:
		l.settle(uctx, t, nil) // the Unlock fails as not held whatever becomes of it
	case carried == nil || carried == t.hold:
		return t, uctx, cancel, nil
	}
	l.c.give(t)
	cancel()
	return nil, nil, nil, l.wrap(ErrNotHeld)
}

// unlocked reports an Unlock's release, result or err, in turn t to tr,
// and returns what the Unlock returns: a failed release ends the hold.
func (l *lock) unlocked(t *turn, tr *releaseTrace, result released, err error) error {
	tr.record(t, result)
	switch {
	case err != nil:
		if h := t.activeHold(); h != nil {
			h.finish(fmt.Errorf("%w: %w", errUnlockFailed, err))
		}
		return l.wrap(err)
	case result == notHeld:
		return l.wrap(ErrNotHeld)
	}
	return nil
}

// release sets the owner's hold count to target with one release request
// in turn t, whose turn the caller has, within ctx, and records the outcome
// in t: the count left, and the end of the hold when no level is left (a
// loss when Redis says the owner held none). leaving says the owner's
// Client stops waiting on the lock (see withdraw).
func (l *lock) release(ctx context.Context, t *turn, target int, leaving bool) (released, error) {
	buf := callBufs.Get().(*callBuf)
	defer freeCall(buf)
	call := l.releaseCallIn(buf, t.id.field, target, leaving)
	if target == 0 {
		t.releasingAll()
	}
	prior := t.unsettled
	var into [2]int64
	reply, _, _, err := l.c.exchangeInto(into[:0], ctx, t, l.kind.release, call, false)
	return l.recordRelease(t, call, target, prior, reply, err)
}

// recordRelease records in turn t the outcome of call, a release to target
// begun when the turn's unsettled seq was prior, from its reply or err: the
// count left, and the end of the hold when no level is left (a loss when
// Redis says the owner held none, or fewer levels than target: notHeld).
// (Levels missing below target go unseen: a release sets the count.)
func (l *lock) recordRelease(t *turn, call scriptCall, target int, prior uint64, reply []int64, err error) (released, error) {
	if err != nil {
		return 0, fmt.Errorf("rlock: release: %w", err)
	}
	result, left, err := parseRelease(reply)
	if err != nil {
		return 0, err
	}
	// exchange stamps args[4] with the seq the answering call superseded:
	// prior for the release's first send, its own earlier send's for a
	// resend. (Parsed, not formatted: the check allocates nothing.)
	superseded, _ := strconv.ParseUint(call.args[4], 10, 64)
	if result == notHeld && target == 0 && superseded != prior && t.activeHold() != nil {
		// An earlier send of this release, whose reply was lost, may have
		// freed the lock: with the hold live until now, it did. (A hold
		// already known lost was gone before: ErrNotHeld. A call of
		// another request whose reply was lost, which this one fenced, was
		// an acquire or a guarded write: it freed nothing, and the owner
		// lost the lock.)
		result = freed
	}
	t.count = left
	if h := t.activeHold(); h != nil {
		switch {
		case result == notHeld:
			h.finish(ErrLockLost)
		case result == freed:
			h.finish(context.Canceled)
		case left < target:
			// Redis held fewer levels than the release leaves (it never
			// raises a count): some were lost, and the hold's callers
			// count on more levels than Redis has. Ending the hold here
			// keeps a later Unlock from freeing the lock under a caller
			// that still counts on a level.
			h.finish(ErrLockLost)
			result = notHeld
		}
	}
	return result, nil
}

// giveBack sets the owner's count back to target in turn t, even when ctx
// is done (bounded by the retry timeout): it takes back a level that was
// granted and cannot be kept, or what a call whose reply was lost may have
// done. A failure is logged as about what; the lease then frees the level.
func (l *lock) giveBack(ctx context.Context, t *turn, target int, what string) error {
	return l.giveBackAs(ctx, t, target, false, what)
}

// giveBackAs is giveBack, for an owner whose Client stops waiting on the
// lock when leaving is true (see withdraw).
//
// A give-back that fails is recorded as done all the same: the turn counts
// target, so that no Unlock counts on the level, and at 0 the hold ends,
// so that the watchdog renews no level that nobody will release. Redis
// may keep the level until its lease runs out; the failed call is
// unsettled, and the owner's next call, which sends an absolute count,
// fences it.
func (l *lock) giveBackAs(ctx context.Context, t *turn, target int, leaving bool, what string) error {
	rctx, cancel := l.c.detached(ctx)
	defer cancel()
	_, err := l.release(rctx, t, target, leaving)
	if err == nil {
		return nil
	}
	l.c.cfg.logger.Warn("rlock: could not give back "+what+"; its lease will free it", "key", l.keys.Value().Hash, "err", err)
	t.count = min(t.count, target)
	if h := t.activeHold(); h != nil && t.count == 0 {
		h.finish(context.Canceled)
	}
	return err
}

// settle takes back whatever an acquire whose reply never came may have
// done: a release call back to the confirmed count of the live hold (0
// when none lives: the lost call began a new hold, and an ended hold's
// count is nobody's, turn.live) supersedes the lost calls, so that none of
// them can apply later, and undoes the one that did. It runs in the turn
// even when ctx is done, bounded by the retry timeout; if Redis stays
// unreachable, the lease bounds an orphan level and the owner's next call
// on the lock fences the lost ones. It returns the error to report of the
// request, which failed with err: ctx's when ctx is done, and, when the
// settling call failed, that one's too, wrapped with ErrOutcomeUnknown.
func (l *lock) settle(ctx context.Context, t *turn, err error) error {
	var serr error
	if t.unsettled != 0 {
		serr = l.giveBack(ctx, t, t.live(), "an acquire whose reply was lost")
	}
	if ctx.Err() != nil {
		err = doneErr(ctx)
	}
	if serr != nil {
		err = fmt.Errorf("%w; %w: settling: %w", err, ErrOutcomeUnknown, serr)
	}
	return err
}

// leaveMarked takes waiter w of call a, on a marked kind (kind.marked),
// out of its channel's queue. When a stops waiting without the lock, the
// owner's last waiting call withdraws the mark the owner's calls share;
// after Close, each does (Close dismissed them all, and its Subscriber
// tells none that it was last).
func (l *lock) leaveMarked(a *acquisition, w *pubsub.Waiter) {
	if last := w.Done(a.g.acquired); !a.g.acquired && (last || errors.Is(l.check(a.octx), ErrClosed)) {
		l.withdraw(a.octx, a.o, true)
	}
}

// withdraw takes back what owner o's refused acquires left on l when o
// stops waiting without the lock: a waiting mark or an admission (rw.lua),
// a place in the queue or a lock handed over meanwhile (queue.lua), its
// Client's place among a Mutex's waiting Clients and a wake-up addressed
// to it meanwhile (waiting.lua), which goes on to the next Client. A
// release back to no level removes it, even when ctx is done, and even
// after Close woke the waiter: other Clients' waiters must not wait out the
// lease of a place nobody will take. (The Client's turns are gone then; the
// release runs in a turn of its own, which is safe because every waiting
// call of the closed Client is failing, and a waiter holds no level.) If it cannot
// run (Redis unreachable), its own lease ends it. When another call of the
// owner holds the lock meanwhile, a release to the count it holds leaves
// its levels as they are and takes the Client's place (release.lua).
//
// A marked kind's owner's calls share its mark: a call that found itself
// the last to stop waiting withdraws it, unless another call of the owner
// waits by the time it has the owner's turn (its ask, before or after
// that turn, made the mark its own).
// last is false for a Mutex waiter that was not its Client's last ready
// waiter (waitParked): its Client still waits, and only a hand-over to it
// whose reply never came (its turn's unsettled seq) is taken back, which
// nobody else would, the lock waiting out its lease meanwhile.
// A Client that Close closed waits no more: its waiter withdraws as last.
func (l *lock) withdraw(ctx context.Context, o *owner, last bool) {
	wctx, cancel := l.c.detached(ctx)
	defer cancel()
	id := l.holdID(o)
	t, err := l.c.take(wctx, id)
	switch {
	case errors.Is(err, ErrClosed):
		t = &turn{id: id}
		last = true // a closed Client waits no more, whatever its Subscriber said
	case err != nil:
		return
	default:
		defer l.c.give(t)
		if last && l.kind.marked && l.c.subs.Tagged(l.keys.Value().Channel, id.field) {
			return
		}
	}
	switch {
	case t.count == 0 && (last || t.unsettled != 0):
		l.giveBackAs(wctx, t, 0, last, "a waiter's mark or place")
	case t.count != 0 && last:
		l.giveBackAs(wctx, t, t.count, true, "a waiter's place")
	}
}

// releaseCallIn is the release script's call that sets owner field's
// count to target, in b, which must outlive the call's request; leaving
// adds ARGV[7] '1': the owner's Client stops waiting (release.lua).
func (l *lock) releaseCallIn(b *callBuf, field string, target int, leaving bool) scriptCall {
	k := l.keys.Value()
	b.keys = [5]string{k.Hash, k.Channel, k.Fence, k.Token, k.Queue}
	b.args[0], b.args[1], b.args[2], b.args[3], b.args[4], b.args[5] = field, "", strconv.Itoa(max(target, 0)), l.c.publish, "", l.c.fenceMs
	if leaving {
		b.args[6] = "1"
		return scriptCall{keys: b.keys[:], args: b.args[:7]}
	}
	return scriptCall{keys: b.keys[:], args: b.args[:6]}
}

// parseRelease reads the release script's reply: {outcome, count left},
// {Handed, token} (freed, for the releasing owner), or {Stale, 0} for a
// stale copy, which a live request never gets.
func parseRelease(reply []int64) (released, int, error) {
	switch {
	case len(reply) != 2:
	case reply[0] == int64(stillHeld) && reply[1] > 0 && reply[1] <= math.MaxInt32:
		return stillHeld, int(reply[1]), nil
	case (reply[0] == int64(notHeld) || reply[0] == int64(freed)) && reply[1] == 0:
		return released(reply[0]), 0, nil
	case reply[0] == int64(lua.Handed): // freed, for the owner; handed to its heir
		return freed, 0, nil
	case reply[0] == int64(lua.Stale):
		return 0, 0, errStale
	}
	return 0, 0, fmt.Errorf("rlock: unexpected release reply %v", slices.Clone(reply)) // a copy: reply stays on its caller's stack
}

// forceUnlock deletes the lock's hash whoever holds it and wakes a waiter,
// once (once.go); this Client's holds on it end with ErrLockLost, also
// when whether it ran is unknown. See Mutex.ForceUnlock.
func (l *lock) forceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, l.wrap(err)
	}
	k := l.keys.Value()
	deleted, err := l.once(ctx, lua.ForceRelease, k.Fence, []string{k.Hash, k.Channel}, []string{l.c.publish})
	if err == nil || errors.Is(err, ErrOutcomeUnknown) {
		for _, h := range l.c.holdsOn(k.Hash) {
			h.finish(errForceUnlocked)
		}
	}
	if err != nil {
		return false, l.wrap(fmt.Errorf("rlock: force release: %w", err))
	}
	return deleted == 1, nil
}
