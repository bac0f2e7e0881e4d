package rlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/pubsub"
)

// A Mutex passes from one owner to a waiter of the same Client in one
// call. A waiter asleep between attempts (waitOnChannel) parks in its
// Client's lot; an Unlock that leaves no level claims the waiter parked
// longest on the lock, takes its turn (never waiting for it), and names it
// as heir to the release script, which then hands the lock to it rather
// than freeing it (lua/release.lua): one round trip instead of a release,
// a message, and the waiter's own acquire. The claimer records the heir's
// grant in the heir's turn, as the heir's acquire would have, gives the
// turn back and pokes the heir, which binds the grant to its context
// (inherit). The heir's call has a number reserved before the release's
// first call, so the request protocol covers it: a resend answers as the
// call that handed over, and when the release's outcome stays unknown the
// heir's turn keeps that number as unsettled, which its next call fences.
//
// The script hands over only while no other Client is recorded as waiting
// (lua/waiting.lua): once another Client's waiter is refused, the next
// release frees the lock and wakes that Client, so the Client passing the
// lock around yields to it at its next release.

// parked is a waiter of this Client asleep between attempts on a lock, for
// owner o and the lease it asked for (0: the watchdog's).
type parked struct {
	l     *lock
	o     *owner
	lease time.Duration
	w     *pubsub.Waiter

	// Guarded by the lot's mu.
	state parkState
	turn  *turn // the waiter's turn, which the claimer has, while claimed
}

// parkState is where a parked waiter stands.
type parkState uint8

const (
	awake   parkState = iota // out of the lot, unclaimed
	asleep                   // in the lot: a release may claim it
	claimed                  // a release is handing it the lock
	handed                   // the lock was handed to it: its turn holds the level
)

// parkingLot is a Client's parked waiters, by lock key, longest asleep
// first.
type parkingLot struct {
	n       atomic.Int64 // waiters in the lot: an Unlock finds none without mu
	mu      sync.Mutex
	waiters map[string][]*parked
}

// park puts p in the lot, asleep.
func (lot *parkingLot) park(p *parked) {
	key := p.l.keys.Value().Hash
	lot.mu.Lock()
	defer lot.mu.Unlock()
	if lot.waiters == nil {
		lot.waiters = make(map[string][]*parked)
	}
	p.state = asleep
	lot.waiters[key] = append(lot.waiters[key], p)
	lot.n.Add(1)
}

// crowded reports whether waiters of this Client sleep on l.
func (lot *parkingLot) crowded(l *lock) bool {
	if lot.n.Load() == 0 {
		return false
	}
	lot.mu.Lock()
	defer lot.mu.Unlock()
	return len(lot.waiters[l.keys.Value().Hash]) > 0
}

// unpark takes p out of the lot when it wakes, and reports whether a
// release claimed it meanwhile: its claimer has its turn until the outcome
// is recorded there (inherit).
func (lot *parkingLot) unpark(p *parked) bool {
	lot.mu.Lock()
	defer lot.mu.Unlock()
	switch p.state {
	case asleep:
		lot.remove(p.l.keys.Value().Hash, p)
		p.state = awake
		return false
	case awake:
		return false
	}
	return true
}

// remove takes p out of the lot's list for key. The caller holds mu.
func (lot *parkingLot) remove(key string, p *parked) {
	list := lot.waiters[key]
	if i := slices.Index(list, p); i >= 0 {
		list = slices.Delete(list, i, i+1)
		lot.n.Add(-1)
	}
	if len(list) == 0 {
		delete(lot.waiters, key)
	} else {
		lot.waiters[key] = list
	}
}

// claim returns the waiter parked longest on l whose turn is free and
// clear (no level, nothing unsettled), claimed, with its turn taken; nil
// when there is none.
func (lot *parkingLot) claim(l *lock) *parked {
	if lot.n.Load() == 0 {
		return nil
	}
	key := l.keys.Value().Hash
	lot.mu.Lock()
	defer lot.mu.Unlock()
	for _, p := range lot.waiters[key] {
		t := l.c.tryTake(p.l.holdID(p.o))
		if t == nil {
			continue
		}
		if t.count != 0 || t.unsettled != 0 {
			l.c.give(t)
			continue
		}
		lot.remove(key, p)
		p.state, p.turn = claimed, t
		return p
	}
	return nil
}

// settle records the outcome of the release that named p as heir: handed
// or not. It gives p's turn back, and pokes p when it has the lock or must
// look again (poke); a waiter that the release yielded past sleeps on.
func (lot *parkingLot) settle(c *Client, p *parked, got, poke bool) {
	lot.mu.Lock()
	t := p.turn
	p.turn = nil
	p.state = awake
	if got {
		p.state = handed
	}
	lot.mu.Unlock()
	c.give(t)
	if poke {
		p.w.Poke()
	}
}

// bequeath records in heir's turn what the release that named it did,
// given its reply or err, the number heirSeq reserved for the heir's call,
// and when the release was first sent: the heir holds a level from the
// grant, as its own acquire would have recorded it; or, when no reply
// came, the hand-over may have applied, and the heir's next call fences
// it. A level the watchdog refuses is given back.
func (l *lock) bequeath(ctx context.Context, heir *parked, heirSeq uint64, reply []int64, err error, sent time.Time) {
	t := heir.turn
	got := err == nil && len(reply) == 2 && reply[0] == int64(lua.Handed)
	if got {
		got = heir.l.keep(ctx, t, grant{acquired: true, count: 1, token: reply[1]}, sent, heir.lease) == nil
	}
	if err != nil {
		t.unsettled = heirSeq
	}
	l.c.lot.settle(l.c, heir, got, got || err != nil)
}

// inherit is a claimed waiter's side of the hand-over, once awake: it
// waits for its turn, which the claimer gives back once the outcome is
// recorded, whatever ctx says (the claimer's request is bounded), and
// binds the level it was handed, if any, to ctx. A level handed to a done
// ctx is given back (bound). acquired is false when nothing was handed.
func (l *lock) inherit(ctx context.Context, p *parked) (context.Context, grant, error) {
	t, err := l.c.take(context.WithoutCancel(ctx), p.l.holdID(p.o))
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer l.c.give(t)
	l.c.lot.mu.Lock()
	got := p.state == handed
	p.state = awake
	l.c.lot.mu.Unlock()
	if !got || t.hold == nil {
		return ctx, grant{}, nil
	}
	lctx, err := l.bound(ctx, t)
	if err != nil {
		return ctx, grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	return lctx, grant{acquired: true, count: t.count, token: t.hold.token}, nil
}
