package pubsub

import (
	"time"

	"github.com/rlock/rlock/internal/alarm"
)

// Waiter is one local waiter in a channel's queue, from Subscribe until
// Done. Its methods are safe for concurrent use, but for WakeAfter.
type Waiter struct {
	c     *channel
	wake  chan struct{} // capacity 1: a pending wake-up; closed by Subscriber.Close
	ready chan struct{} // closed when Subscribe may return; nil for a waiter ready at once
	tag   string        // the name addressed messages use; "" for none

	// Guarded by c.s.mu. (Why Subscribe fails, and the note of an
	// addressed message not yet taken, are kept by the channel: few
	// waiters ever have one.)
	due   time.Duration // when s.wakeups wakes the waiter (alarm.Now); 0 when not armed
	by    time.Duration // the earliest Deadline not yet passed (alarm.Now), or 0: caps the next WakeAfter
	place int32         // its place in s.wakeups (see Place)

	subscribed bool // a confirmed subscription made it ready
	woken      bool // a message's wake-up was handed to it
	left       bool // out of the queue
}

func newWaiter(c *channel, tag string) *Waiter {
	return &Waiter{c: c, wake: make(chan struct{}, 1), tag: tag}
}

// Note takes the note of the latest message addressed to the waiter (see
// Addressed) that it has not taken yet, and reports whether there was one.
// A waiter that left (Done) has none.
func (w *Waiter) Note() (string, bool) {
	s := w.c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	note := w.c.notes[w]
	delete(w.c.notes, w)
	return note, note != ""
}

// Wake receives when the waiter should check the lock again: a message on
// the channel picked this waiter, the subscription was made again after a
// loss, or another waiter left without the lock it had been woken for.
// Several wake-ups before a receive count as one. The channel is closed
// when the Subscriber is closed, so a loop that waits on it must stop then.
func (w *Waiter) Wake() <-chan struct{} {
	return w.wake
}

// Poke wakes the waiter from within the process, as a message that picked
// it would, but owing nothing: a waiter that leaves after it without the
// lock hands no wake-up on. (A release of this process that handed the
// waiter the lock pokes it.) A waiter that left is not woken.
func (w *Waiter) Poke() {
	s := w.c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.left {
		w.nudge()
	}
}

// maxWait caps a wait, far beyond any lease, so that a wake-up time never
// overflows.
const maxWait = 100 * 365 * 24 * time.Hour

// WakeAfter arranges a wake-up on Wake after d, in place of any arranged
// before, for a waiter that must check the lock again by a time (when the
// holder's lease runs out: an expiry publishes nothing); sooner if a
// Deadline addressed to the waiter since its last wake-up asks for it.
func (w *Waiter) WakeAfter(d time.Duration) {
	s := w.c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	due := alarm.Now() + min(d, maxWait)
	if w.by != 0 && w.by < due {
		due = w.by
	}
	w.by = 0
	w.arm(due)
}

// wakeBy brings the waiter's wake-up forward to by: the armed timer, and
// the next WakeAfter until by has passed, so that a waiter that was awake
// when the Deadline came still sleeps no longer. The caller holds s.mu.
func (w *Waiter) wakeBy(by time.Duration) {
	if w.by == 0 || by < w.by {
		w.by = by
	}
	if w.due != 0 && by < w.due {
		w.arm(by)
	}
}

// arm has the Subscriber's wake-ups wake the waiter at due. The caller
// holds s.mu.
func (w *Waiter) arm(due time.Duration) {
	w.due = max(due, 1) // 0 means not armed
	w.c.s.wakeups.Set(w, w.due)
}

// Place is where the waiter's place in its Subscriber's wake-ups is kept
// (it is an alarm.Item).
func (w *Waiter) Place() *int32 {
	return &w.place
}

// timeUp is WakeAfter's wake-up of the waiters in ws, but for those that
// have left or were armed again meanwhile (a WakeAfter that took s.mu
// first replaced the arrangement that fired): the Subscriber's wake-ups
// hand them over.
func timeUp(ws []*Waiter) {
	s := ws[0].c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := alarm.Now()
	for _, w := range ws {
		if w.due == 0 || w.due > now {
			continue
		}
		w.due = 0
		if w.by <= now {
			w.by = 0
		}
		if !w.left {
			w.nudge()
		}
	}
}

// Done leaves the queue; acquired says whether the waiter took the lock.
// A waiter that a message woke but that leaves without the lock (it was
// cancelled, timed out, or failed) hands a wake-up on to the next waiter,
// so that the unlock it was told of still reaches someone who wants the
// lock; so does one that took the lock with a wake-up still pending, which
// a message handed it while its attempt was under way (a second release,
// of a semaphore's permits, say). Done reports true to the last ready
// waiter of a channel (those still in Subscribe cannot take a wake-up): a
// wake-up addressed to this Subscriber (Addressed) that it did not use is
// nobody's here any more, and the publisher may need to be told; to one
// that took the lock it reports true only when another left without it
// before while ready waiters remained, one of which may have taken the
// lock already (so that the publisher's record of this Subscriber may
// be stale). A waiter named by a tag (SubscribeAs) is told whether it was
// the last of its tag. The last waiter of all unsubscribes from the
// channel. Calls after the first, and calls after Subscriber.Close, do
// nothing and report false.
func (w *Waiter) Done(acquired bool) (last bool) {
	s := w.c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w.disarm()
	if w.left {
		return false
	}
	handOn := w.woken && !acquired
	if w.woken && acquired {
		select {
		case <-w.wake: // a wake-up still pending: its message is someone else's
			handOn = true
		default:
		}
	}
	return w.c.leave(w, handOn, acquired)
}

// disarm cancels WakeAfter's wake-up. The caller holds s.mu.
func (w *Waiter) disarm() {
	if w.due != 0 {
		w.c.s.wakeups.Remove(w)
		w.due = 0
	}
}

// markReady lets Subscribe return w: its channel's subscription is
// confirmed. The caller holds s.mu.
func (w *Waiter) markReady() {
	w.subscribed = true
	if w.ready != nil {
		close(w.ready)
		w.ready = nil // Subscribe holds its own copy: free the channel
	}
}

// nudge gives w a wake-up unless one is pending, and reports whether it
// did. The caller holds s.mu.
func (w *Waiter) nudge() bool {
	select {
	case w.wake <- struct{}{}:
		return true
	default:
		return false
	}
}

// fail takes w out of the game before its subscription was confirmed:
// Subscribe returns err (its channel keeps it until then). The caller
// holds s.mu and removes w from the queue.
func (w *Waiter) fail(err error) {
	w.left = true
	if w.c.failures == nil {
		w.c.failures = make(map[*Waiter]error)
	}
	w.c.failures[w] = err
	close(w.ready)
}

// dismiss ends w for Subscriber.Close: Wake is closed for good, and a
// Subscribe still waiting returns ErrClosed. The caller holds s.mu and
// empties the queue.
func (w *Waiter) dismiss() {
	if !w.subscribed {
		w.fail(ErrClosed)
	}
	w.left = true
	w.disarm()
	close(w.wake)
}
