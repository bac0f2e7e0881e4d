package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/watchdog"
)

// waitInQueue is FairMutex's wait: the waiter subscribes under
// its own field, so that a message addressed to it wakes it and nobody
// else, and then asks in turn, which queues it in Redis. From then on it
// sleeps, parked in its Client's lot, until the lock is handed over to it
// (by a release of this Client that found it at the queue's head,
// handoff.go, or by a message: adopt), its wait ends, a resubscription or
// ForceUnlock wakes it, or the holder's lease would run out, and then asks
// again. When the waiter just ahead of it is handed the lock, it is told
// that lease (pubsub.Deadline), without being woken, and asks again when
// it would run out at the latest; unless its latest refusal has it ask by
// then anyway, when Redis tells it nothing (lua/queue.lua). A wait that ends without the lock
// leaves the queue, handing on a lock it was handed meanwhile. Like
// waitOnChannel, it records its outcome in a.
func (l *lock) waitInQueue(a *acquisition, wait, lease time.Duration) {
	q := l.enter(a, wait, lease)
	if q == nil {
		return
	}
	q.wait(a, lease)
	l.leaveMarked(a, q.p.w) // the owner's calls that wait share its entry
	q.end()
}

// enter subscribes a's waiter under its own field and returns its place,
// whose wait ends at the deadline wait gives; nil, with the reason
// recorded in a, when it could not subscribe.
func (l *lock) enter(a *acquisition, wait, lease time.Duration) *place {
	id := l.holdID(a.o)
	w, deadline, err := l.subscribe(a.octx, wait, id.field)
	if w == nil {
		// Another call of the owner that queued it may have left its
		// entry to this one, which was still in Subscribe then.
		l.withdraw(a.octx, a.o, true)
		a.g, a.err = grant{}, err
		return nil
	}
	l.c.pin(id) // until end: adopt reads the turn's answered seq
	return &place{l: l, id: id, floor: l.c.seq.Load(), deadline: deadline, p: parked{o: a.o, lease: lease, w: w}}
}

// place is a waiter's place in a fair lock's queue as this process knows
// it. The watchdog renews the entry's own lease, and anchor is the latest
// send time of a request or renewal that found the waiter queued: Redis
// ends the entry's lease, and a lock handed over to it, no sooner than
// anchor plus the lease.
type place struct {
	l        *lock
	id       holdID
	deadline time.Time // when the wait ends without the lock; zero: never
	// floor is the Client's seq before the waiter's first ask, which
	// ranks it among its Client's waiters (parked.rank); asked is the seq
	// of its latest ask that Redis answered. A lock handed over after that
	// ask names it; one handed over before it (which the ask found given
	// up, expired or taken) an earlier call, and one handed over after an
	// ask of another call of its owner (goroutines that share an owner
	// share its entry), that one's, whose lease Redis set. Used by the
	// waiter's goroutine only.
	floor, asked uint64
	// p parks the waiter in its Client's lot between asks, where a
	// release of this Client may claim it as heir.
	p parked

	mu      sync.Mutex
	anchor  time.Time
	watched *watchdog.Entry // renews the entry; nil before the first ask and after a loss
}

// wait is waitInQueue's loop: ask, then sleep parked until woken, the
// holder's lease would run out, or the deadline passes, which ends it
// without the lock. A waiter whose wait ran out still leaves the lot, and
// takes a lock a release of this Client handed it meanwhile. (The ask is
// a helper, and sleep is called from here: a sleeping waiter's stack
// stays under the size where Go gives it 8 KB rather than 4.)
func (q *place) wait(a *acquisition, lease time.Duration) {
	for {
		pause, ok := q.ask(a, lease)
		if a.err != nil || a.g.acquired {
			return
		}
		err := sleep(a.octx, q.p.w, pause)
		if a.lctx, a.g, a.err = q.l.wokeParked(a.octx, &q.p); a.g.acquired || a.err != nil {
			return
		}
		if a.err = err; err != nil || !ok {
			return
		}
		a.trace.wakeups++
	}
}

// ask is the waiter's turn before it sleeps, its outcome recorded in a:
// it adopts a hand-over by message, if one came, or else asks Redis,
// which queues it (or keeps its place) when it refuses. Refused, the
// waiter parks, and ask returns how long it may sleep, false when its
// wait has run out (capPause).
func (q *place) ask(a *acquisition, lease time.Duration) (time.Duration, bool) {
	if note, noted := q.p.w.Note(); noted {
		if a.lctx, a.g, a.err = q.adopt(a.octx, note, lease); a.err != nil || a.g.acquired {
			return 0, false
		}
	}
	q.p.asked = alarm.Now()
	sent := time.Now()
	if q.l.waiterAttempt(a, q.id, lease); a.err != nil || a.g.acquired {
		return 0, false
	}
	q.asked = a.g.seq
	if a.err = q.queued(sent); a.err != nil {
		a.g = grant{}
		return 0, false
	}
	if q.p.rank == 0 {
		q.p.rank = q.floor + 1 // its first ask that queued it: Redis keeps its place
	}
	q.l.c.lot.park(q.l, &q.p)
	return capPause(q.deadline, nextCheck(a.g.pttl, q.l.c.cfg.lease))
}

// queued records an ask sent at sent that Redis answered by queueing the
// waiter (or keeping its place), and has the watchdog renew the entry.
func (q *place) queued(sent time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sent.After(q.anchor) {
		q.anchor = sent
	}
	if q.watched != nil {
		return nil
	}
	h := &watchdog.Entry{Key: q.l.keys.Value().Queue, Field: q.id.field, Holder: q}
	if err := q.l.c.dog.Add(h); err != nil {
		if errors.Is(err, watchdog.ErrClosed) {
			return ErrClosed
		}
		return fmt.Errorf("rlock: watchdog: %w", err)
	}
	q.watched = h
	return nil
}

// Renewed records a renewal of the entry sent at sent (q is its
// watchdog.Holder).
func (q *place) Renewed(sent time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if sent.After(q.anchor) {
		q.anchor = sent
	}
}

// Lost records that the entry h renewed is gone: the lock was handed over
// to the waiter, or its own lease ran out (Redis was unreachable for it).
// The waiter is woken to ask at once: the ask tells which, and queues it
// again if need be, under a new watchdog hold. (A waiter left out of the
// queue is woken by no release.)
func (q *place) Lost(h *watchdog.Entry) {
	q.mu.Lock()
	if q.watched == h {
		q.watched = nil
	}
	q.mu.Unlock()
	q.p.w.Poke()
}

// end stops the entry's renewal and unpins the owner's turn.
func (q *place) end() {
	q.mu.Lock()
	h := q.watched
	q.watched = nil
	q.mu.Unlock()
	if h != nil {
		q.l.c.dog.Remove(h)
	}
	q.l.c.unpin(q.id)
}

// adopt takes the lock that a release handed over to the waiter, as the
// note of the message addressed to it says ("<seq> <token>"), without
// asking Redis. Redis set the lock's lease from the entry's own lease (or
// the fixed lease asked for) when it handed it over, after the anchor: so
// the hold's local deadline is reckoned from the anchor, never from the
// message's arrival. A note that names another call than the waiter's
// latest ask (an earlier one, or another call of its owner, whose lease
// Redis set), or one this owner's turn has moved past (Redis answered
// another call of the owner since, which may have taken the lock handed
// over and let it go again: the place pins the turn, so that its answered
// seq outlives the waits between asks; or a call is unsettled, or a hold
// lives), or one whose local deadline has passed already, is not adopted:
// the waiter asks Redis instead, which knows. Nor is any with
// WithReplicaAck: the hand-over's writes were not acknowledged by
// replicas, and the ask that re-enters the lock handed over is, with them.
func (q *place) adopt(ctx context.Context, note string, lease time.Duration) (context.Context, grant, error) {
	seq, token, ok := parseHandOver(note)
	if !ok || seq != q.asked || q.l.c.cfg.replicas > 0 {
		return ctx, grant{}, nil
	}
	l := q.l
	t, err := l.c.take(ctx, q.id)
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer l.c.give(t)
	if t.answered != seq || t.count != 0 || t.unsettled != 0 || t.activeHold() != nil {
		return ctx, grant{}, nil
	}
	q.mu.Lock()
	anchor := q.anchor
	q.mu.Unlock()
	if set := l.c.leaseOr(lease); !time.Now().Before(anchor.Add(set - drift(set))) {
		// Handed over too long ago for this process to know it still
		// holds (it was frozen, say): ask Redis, which knows.
		return ctx, grant{}, nil
	}
	g := grant{acquired: true, count: 1, token: token}
	if err := l.keep(ctx, t, g, anchor, lease); err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	lctx, err := l.bound(ctx, t)
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	return lctx, g, nil
}

// parseHandOver reads a hand-over note, "<seq> <token>".
func parseHandOver(note string) (seq uint64, token int64, ok bool) {
	a, b, found := strings.Cut(note, " ")
	seq, err1 := strconv.ParseUint(a, 10, 64)
	token, err2 := strconv.ParseInt(b, 10, 64)
	return seq, token, found && err1 == nil && err2 == nil
}
