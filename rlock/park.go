package rlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/pubsub"
)

// A Mutex's waiter parks in its Client's lot while it sleeps, so that a
// release by another owner of the same Client can hand it the lock
// (handoff.go). One that arrives behind a hold of its own Client parks
// without asking Redis at all: the hold's release claims it, or the
// hold's end pokes it to ask.

// waitParked is waitOnChannel for a Mutex: its waiter sleeps parked
// (retryParked), and when it stops waiting without the lock, it withdraws
// its Client from the lock's waiting Clients if it was the Client's last
// waiter, and a wake-up addressed to the Client meanwhile goes on to the
// next Client (lua/waiting.lua); last or not, it takes back a hand-over to
// it whose reply never came (withdraw). The last waiter withdraws the
// Client even when it took the lock, if one before it left without the
// lock while it was still waiting (pubsub Waiter.Done): that one's refusal
// may have recorded the Client after this one's grant took it out. Like
// waitOnChannel, it records its outcome in a.
func (l *lock) waitParked(a *acquisition, wait, lease time.Duration) {
	w, deadline, err := l.subscribe(a.octx, wait, "")
	if w == nil {
		a.g, a.err = grant{}, err
		return
	}
	p := &parked{o: a.o, lease: lease, w: w}
	l.retryParked(a, p, deadline, lease)
	if last := w.Done(a.g.acquired); !a.g.acquired || last {
		l.withdraw(a.octx, a.o, last)
	}
}

// retryParked is retry for waiter p, which sleeps parked. One that
// arrives behind a hold of this Client parks without asking; one that
// woke for anything but a hand-over (a message, its timer, a poke) asks.
// (The ask and the wake-up are helpers, and sleep is called from here: a
// sleeping waiter's stack stays under the size where Go gives it 8 KB
// rather than 4.)
func (l *lock) retryParked(a *acquisition, p *parked, deadline time.Time, lease time.Duration) {
	for behind := true; ; behind = false {
		check := l.c.cfg.lease // behind a hold: its release or end wakes p
		if !behind || !l.c.lot.parkBehind(l, p) {
			if l.askParked(a, p, lease); a.err != nil || a.g.acquired {
				return
			}
			check = nextCheck(a.g.pttl, l.c.cfg.lease)
		}
		// A waiter whose wait ran out (pause <= 0) still leaves the lot,
		// and takes a lock it was handed meanwhile.
		pause, ok := capPause(deadline, check)
		err := sleep(a.octx, p.w, pause)
		if a.lctx, a.g, a.err = l.wokeParked(a.octx, p); a.g.acquired || a.err != nil {
			return
		}
		if a.err = err; err != nil || !ok {
			return
		}
		a.trace.wakeups++
	}
}

// askParked is waiter p's attempt, its outcome recorded in a; refused,
// p parks.
func (l *lock) askParked(a *acquisition, p *parked, lease time.Duration) {
	p.asked = alarm.Now()
	if l.waiterAttempt(a, l.holdID(p.o), lease); a.err == nil && !a.g.acquired {
		l.c.lot.park(l, p)
	}
}

// wokeParked takes waiter p, awake, out of the lot, and returns what
// inherit does when a release claimed it meanwhile.
func (l *lock) wokeParked(ctx context.Context, p *parked) (context.Context, grant, error) {
	if !l.c.lot.unpark(l.keys.Hash(), p) {
		return ctx, grant{}, nil
	}
	return l.inherit(ctx, p)
}

// inherit is a claimed waiter's side of the hand-over, once awake: it
// waits for its turn, which the claimer gives back once the outcome is
// recorded, whatever ctx says (the claimer's request is bounded), and
// binds the level it was handed, if any, to ctx. A level handed to a done
// ctx is given back (bound). acquired is false when nothing was handed.
func (l *lock) inherit(ctx context.Context, p *parked) (context.Context, grant, error) {
	t, err := l.c.take(context.WithoutCancel(ctx), l.holdID(p.o))
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer l.c.give(t)
	l.c.lot.mu.Lock()
	handed := p.hold
	if p.state == asleep { // not handed: settle left it in the lot
		l.c.lot.remove(l.keys.Hash(), p)
	}
	p.state, p.hold = awake, nil
	l.c.lot.mu.Unlock()
	if handed == nil || t.hold != handed || !handed.active() {
		// Not handed; or the hold handed to it ended, and another call of
		// its owner, whose turn came first, may have begun the next: p
		// asks again, and re-enters that one.
		return ctx, grant{}, nil
	}
	lctx, err := l.bound(ctx, t)
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	return lctx, grant{acquired: true, count: t.count, token: t.hold.token}, nil
}

// parked is a waiter of this Client asleep between attempts on a lock, for
// owner o and the lease it asked for (0: the watchdog's). The lock is the
// lot's key it parks under, which the lot's callers name: a sleeping
// waiter keeps no more than it needs.
type parked struct {
	o     *owner
	lease time.Duration
	w     *pubsub.Waiter

	// rank orders a FairMutex's waiters in the lot as its queue in Redis
	// does (fairqueue.go): lower first; 0 for a Mutex's, which park in
	// the order they park.
	rank uint64

	// asked is when its latest ask was sent (alarm.Now): a hold of its
	// owner begun since then crossed the refusal (park). Set by the
	// waiter's goroutine before the ask.
	asked time.Duration

	// Guarded by the lot's mu.
	state  parkState
	behind bool  // it parked without asking Redis (parkBehind): nobody else wakes it
	hold   *hold // the hold it was handed, while handed
}

// parkState is where a parked waiter stands.
type parkState uint8

const (
	awake   parkState = iota // out of the lot, unclaimed
	asleep                   // in the lot: a release may claim it
	claimed                  // in the lot: a release is handing it the lock
	handed                   // out of the lot: the lock was handed to it, its turn holds the level
)

// parkingLot is a Client's parked waiters and the holds they wait behind,
// by lock key. A key has an entry only while waiters of this Client park
// on it or holds it counted are live: an uncontended lock has none.
type parkingLot struct {
	live    atomic.Int64 // entries: a Lock or Unlock finds none without mu
	mu      sync.Mutex
	entries map[string]*lotEntry
}

// lotEntry is one lock's part of the lot.
type lotEntry struct {
	waiters []*parked // longest asleep first (a FairMutex's: first in its queue first)
	// held counts this Client's holds on the lock begun while the entry
	// lived (holding): while one is live, a waiter may park without
	// asking Redis (parkBehind), since the hold's release will claim it
	// or the hold's end will poke it.
	held int
}

// entry returns key's entry, made if make is true, or nil. The caller
// holds mu.
func (lot *parkingLot) entry(key string, make bool) *lotEntry {
	e := lot.entries[key]
	if e == nil && make {
		if lot.entries == nil {
			lot.entries = map[string]*lotEntry{}
		}
		e = &lotEntry{}
		lot.entries[key] = e
		lot.live.Add(1)
	}
	return e
}

// tidy drops key's entry e once nothing is in it. The caller holds mu.
func (lot *parkingLot) tidy(key string, e *lotEntry) {
	if len(e.waiters) == 0 && e.held == 0 {
		delete(lot.entries, key)
		lot.live.Add(-1)
	}
}

// park puts p in the lot under l's key, asleep, after Redis refused it.
// When p's owner has taken the lock since p asked (a call of the owner in
// another goroutine was granted while p's was refused), p is poked at
// once to re-enter: holding pokes the owner's waiters asleep in the lot,
// and p was not one of them yet. (A hold is in its turn before holding
// counts it: newHold. A hold older than the ask is one Redis no longer
// knows: p sleeps.)
func (lot *parkingLot) park(l *lock, p *parked) {
	lot.mu.Lock()
	defer lot.mu.Unlock()
	lot.putAsleep(lot.entry(l.keys.Hash(), true), p)
	p.behind = false
	if h := l.c.liveHold(l.holdID(p.o)); h != nil && h.since >= p.asked {
		p.w.Poke()
	}
}

// parkBehind puts p in the lot under l's key without asking Redis, and
// reports true, when a hold of this Client on l is live and counted: its
// release claims p, or its end pokes p to ask. Not behind a hold of p's
// own owner, which no release hands to p: p asks, and re-enters. (A hold
// of its owner that begins later pokes it: holding.)
func (lot *parkingLot) parkBehind(l *lock, p *parked) bool {
	if lot.live.Load() == 0 {
		return false
	}
	lot.mu.Lock()
	defer lot.mu.Unlock()
	e := lot.entry(l.keys.Hash(), false)
	if e == nil || e.held == 0 {
		return false
	}
	if l.c.liveHold(l.holdID(p.o)) != nil {
		return false
	}
	lot.putAsleep(e, p)
	p.behind = true
	return true
}

// putAsleep puts p among e's waiters, asleep: after those of its rank or
// lower. The caller holds mu.
func (lot *parkingLot) putAsleep(e *lotEntry, p *parked) {
	p.state = asleep
	i := len(e.waiters)
	for i > 0 && e.waiters[i-1].rank > p.rank {
		i--
	}
	e.waiters = slices.Insert(e.waiters, i, p)
}

// unpark takes p out of the lot (under key) when it wakes, and reports
// whether a release claimed it meanwhile: its claimer has its turn until
// the outcome is recorded there (inherit).
func (lot *parkingLot) unpark(key string, p *parked) bool {
	lot.mu.Lock()
	defer lot.mu.Unlock()
	switch p.state {
	case asleep:
		lot.remove(key, p)
		p.state = awake
		return false
	case awake:
		return false
	}
	return true
}

// remove takes p out of key's waiters. The caller holds mu.
func (lot *parkingLot) remove(key string, p *parked) {
	e := lot.entries[key]
	e.waiters = slices.DeleteFunc(e.waiters, func(q *parked) bool { return q == p })
	lot.tidy(key, e)
}

// claim returns the waiter parked longest on l whose turn is free and
// clear (no level, nothing unsettled), claimed, and its turn, taken, which
// the claimer gives back through settle; nil when there is none. It stays
// in the lot until settled: a waiter that a release could not hand the
// lock to may be claimed by the next. (A lot's key is one kind's, so a
// waiter's hold on l has l's id.)
func (lot *parkingLot) claim(l *lock) (*parked, *turn) {
	if lot.live.Load() == 0 {
		return nil, nil
	}
	key := l.keys.Hash()
	lot.mu.Lock()
	defer lot.mu.Unlock()
	e := lot.entry(key, false)
	if e == nil {
		return nil, nil
	}
	for _, p := range e.waiters {
		if p.state != asleep {
			continue
		}
		t := l.c.tryTake(l.holdID(p.o))
		if t == nil {
			continue
		}
		if t.count != 0 || t.unsettled != 0 {
			l.c.give(t)
			continue
		}
		p.state = claimed
		return p, t
	}
	return nil, nil
}

// settle records the outcome of the release of the lock at key that named
// p as heir, handed (got: p leaves the lot) or not (p sleeps on in it),
// gives p's turn t back, and pokes p when poke is true: to bind the lock
// it was handed, or to ask Redis.
func (lot *parkingLot) settle(c *Client, key string, p *parked, t *turn, got, poke bool) {
	lot.mu.Lock()
	p.state = asleep
	if got {
		lot.remove(key, p)
		p.state, p.hold = handed, t.hold
	}
	lot.mu.Unlock()
	c.give(t)
	if poke {
		p.w.Poke()
	}
}

// holding counts the hold of id on l that begins, if l's key has an
// entry, and reports whether it did: the hold must then call unheld when
// it ends. The waiters of the hold's owner parked on l are poked to
// re-enter at once: no release wakes them while their owner holds the
// lock. (A claimed one is woken by its settle.)
func (lot *parkingLot) holding(l *lock, id holdID) bool {
	if lot.live.Load() == 0 {
		return false
	}
	lot.mu.Lock()
	defer lot.mu.Unlock()
	e := lot.entry(id.key, false)
	if e == nil {
		return false
	}
	e.held++
	for _, p := range e.waiters {
		if p.state == asleep && l.c.isKindField(id.field, p.o, l.kind.suffix) {
			p.w.Poke()
		}
	}
	return true
}

// unheld counts the end of a hold that holding counted. When no counted
// hold is left, the waiters that parked behind one are poked to ask
// Redis: nobody else knows of them. (Those that asked are recorded in
// Redis, and a release wakes them.)
func (lot *parkingLot) unheld(key string) {
	lot.mu.Lock()
	defer lot.mu.Unlock()
	e := lot.entries[key]
	if e.held--; e.held > 0 {
		return
	}
	for _, p := range e.waiters {
		if p.behind {
			p.w.Poke()
		}
	}
	lot.tidy(key, e)
}
