package rlock

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
)

// holdID names one owner's hold on one lock within a Client.
type holdID struct {
	key   string // the lock's hash key
	field string // <clientID>:<ownerToken>, and the kind's suffix
}

// turn is one owner's standing on one lock in this Client: the hold count
// Redis confirmed, the request whose reply never came, and the hold that
// lock contexts carry. The owner's calls on the lock take turns: requests
// of one owner on one lock are never in flight together, whatever
// goroutines share the owner. That is what lets every request carry an
// absolute count, lets a resend fence off the copies before it, and keeps
// concurrent re-entries with different leases from undoing each other.
//
// A turn lives in its Client's table while a goroutine uses it, a level is
// held, a request's outcome is still unsettled, or a FairMutex waiter of
// the owner pins it (Client.pin).
type turn struct {
	id holdID

	// Guarded by the turn.
	count     int    // levels Redis granted this owner and it has not left
	unsettled uint64 // seq of the latest request whose reply never came, or 0
	answered  uint64 // seq of the latest call Redis answered

	// Guarded by its shard's mu (and written in the turn too). The
	// goroutines that wait for the turn are in the shard's waiting: few
	// turns ever have any, and a held lock keeps its turn.
	users int32 // goroutines that have or wait for the turn, and pins (Client.pin)
	taken bool  // a goroutine has the turn
	hold  *hold // the current hold; nil before the first grant
}

// turnWaiter is a goroutine waiting for a turn that another has: only
// goroutines that share an owner and a lock ever wait, so a turn keeps no
// channel of its own, and a waiter makes one.
type turnWaiter struct {
	handed chan struct{} // closed when the turn is handed to the waiter
	next   *turnWaiter
}

// turnShards is how many parts a Client's table of turns is cut into, each
// under a mutex of its own, by holdID: goroutines on different locks, or
// different owners on one, seldom wait for one another's bookkeeping (64
// goroutines on one mutex spent more time waiting for it than on their
// requests). The owners waiting on one lock spread over every part, whose
// maps then grow a little each rather than one by all of them.
const turnShards = 32

// turnTable is a Client's turns, by holdID.
type turnTable struct {
	shards [turnShards]turnShard
}

// turnShard is one part of a turnTable, padded to its own cache line.
// Its turns are keyed by the hash of their id: a slot of a hash and a
// pointer takes less than half the space of one keyed by the id's two
// strings, and a lock held keeps its turn's slot. A turn whose hash
// another has already is in clash, by id.
type turnShard struct {
	mu      sync.Mutex
	turns   map[uint64]*turn      // nil once the Client is closed
	clash   map[holdID]*turn      // the turns whose hash is another's in turns; nil once closed too
	waiting map[*turn]*turnWaiter // the goroutines that wait for a turn, first first
	_       [32]byte
}

var turnSeed = maphash.MakeSeed()

// init makes the table's maps.
func (tt *turnTable) init() {
	for i := range tt.shards {
		tt.shards[i].turns = make(map[uint64]*turn)
	}
}

// shard returns the part of the table where the turn of id lives, and
// id's hash, its key there.
func (tt *turnTable) shard(id holdID) (*turnShard, uint64) {
	h := maphash.Comparable(turnSeed, id)
	return &tt.shards[h%turnShards], h
}

// all returns the turns of sh. The caller holds sh.mu.
func (sh *turnShard) all() []*turn {
	out := make([]*turn, 0, len(sh.turns)+len(sh.clash))
	for _, t := range sh.turns {
		out = append(out, t)
	}
	for _, t := range sh.clash {
		out = append(out, t)
	}
	return out
}

// close closes the table to new turns and returns the holds of its turns.
func (tt *turnTable) close() []*hold {
	var holds []*hold
	for i := range tt.shards {
		sh := &tt.shards[i]
		sh.mu.Lock()
		for _, t := range sh.all() {
			if t.hold != nil {
				holds = append(holds, t.hold)
			}
		}
		sh.turns, sh.clash = nil, nil
		sh.mu.Unlock()
	}
	return holds
}

// holdsOn returns the holds of the turns on the lock at key.
func (tt *turnTable) holdsOn(key string) []*hold {
	var out []*hold
	for i := range tt.shards {
		sh := &tt.shards[i]
		sh.mu.Lock()
		for _, t := range sh.all() {
			if t.id.key == key && t.hold != nil {
				out = append(out, t.hold)
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// len returns how many turns the table holds.
func (tt *turnTable) len() int {
	n := 0
	for i := range tt.shards {
		sh := &tt.shards[i]
		sh.mu.Lock()
		n += len(sh.all())
		sh.mu.Unlock()
	}
	return n
}

// idleTurns keeps turns dropped from their Client for the next ones: an
// uncontended Lock+Unlock makes one and drops it, and then allocates none.
var idleTurns = sync.Pool{New: func() any { return new(turn) }}

// take waits for id's turn, or fails when ctx is done first (as doneErr
// says) or the Client is closed. The caller must give the turn back.
func (c *Client) take(ctx context.Context, id holdID) (*turn, error) {
	sh, hash := c.turns.shard(id)
	sh.mu.Lock()
	t := sh.turnOf(id, hash)
	if t == nil {
		sh.mu.Unlock()
		return nil, ErrClosed
	}
	t.users++
	if !t.taken {
		t.taken = true
		sh.mu.Unlock()
		return t, nil
	}
	w := &turnWaiter{handed: make(chan struct{})}
	sh.queue(t, w)
	sh.mu.Unlock()

	var err error
	select {
	case <-w.handed:
		return t, nil
	case <-ctx.Done():
		err = doneErr(ctx) // with its cause: a lock context's loss matches ErrLockLost
	case <-c.closed:
		err = ErrClosed
	}
	sh.mu.Lock()
	if !sh.unqueue(t, w) {
		// Handed the turn as it gave up: it has it, as if handed first.
		sh.mu.Unlock()
		return t, nil
	}
	t.users--
	sh.drop(t, hash)
	sh.mu.Unlock()
	return nil, err
}

// tryTake returns id's turn if it is free, and nil if a goroutine has it
// or the Client is closed: for a caller that must not wait (a release
// that hands its lock to a waiter, handoff.go). The caller must give the
// turn back.
func (c *Client) tryTake(id holdID) *turn {
	sh, hash := c.turns.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.turnOf(id, hash)
	if t == nil || t.taken {
		return nil
	}
	t.taken = true
	t.users++
	return t
}

// find returns id's turn, or nil when it has none; hash is id's. The
// caller holds sh.mu.
func (sh *turnShard) find(id holdID, hash uint64) *turn {
	if t := sh.turns[hash]; t != nil && t.id == id {
		return t
	}
	return sh.clash[id]
}

// turnOf returns id's turn, made if there is none (take and tryTake count
// their caller among its users), or nil once the Client is closed; hash
// is id's. The caller holds sh.mu.
func (sh *turnShard) turnOf(id holdID, hash uint64) *turn {
	if sh.turns == nil {
		return nil
	}
	if t := sh.find(id, hash); t != nil {
		return t
	}
	t := idleTurns.Get().(*turn)
	t.id = id
	switch {
	case sh.turns[hash] == nil:
		sh.turns[hash] = t
	case sh.clash == nil:
		sh.clash = map[holdID]*turn{id: t}
	default:
		sh.clash[id] = t
	}
	return t
}

// give ends the caller's turn: it hands it to the first goroutine waiting
// for it, if any, and else drops t from the Client when nobody uses it and
// nothing is held or unsettled.
func (c *Client) give(t *turn) {
	sh, hash := c.turns.shard(t.id)
	sh.mu.Lock()
	t.users--
	if w := sh.waiting[t]; w != nil {
		if w.next == nil {
			delete(sh.waiting, t)
		} else {
			sh.waiting[t] = w.next
		}
		close(w.handed)
		sh.mu.Unlock()
		return
	}
	t.taken = false
	sh.drop(t, hash)
	sh.mu.Unlock()
}

// pin keeps id's turn in the Client, held or not, until unpin: a FairMutex
// waiter pins its owner's turn while it waits, so that the turn's answered
// seq outlives the moments between its asks when nothing else would keep
// the turn (place.adopt). It does nothing once the Client is closed.
func (c *Client) pin(id holdID) {
	sh, hash := c.turns.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if t := sh.turnOf(id, hash); t != nil {
		t.users++
	}
}

// unpin ends a pin of id's turn.
func (c *Client) unpin(id holdID) {
	sh, hash := c.turns.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if t := sh.find(id, hash); t != nil {
		t.users--
		sh.drop(t, hash)
	}
}

// queue puts w last among the goroutines waiting for t. The caller holds
// sh.mu.
func (sh *turnShard) queue(t *turn, w *turnWaiter) {
	first := sh.waiting[t]
	if first == nil {
		if sh.waiting == nil {
			sh.waiting = make(map[*turn]*turnWaiter)
		}
		sh.waiting[t] = w
		return
	}
	for first.next != nil {
		first = first.next
	}
	first.next = w
}

// unqueue takes w out of the goroutines waiting for t, and reports false
// when it was not among them any more: give handed it the turn. The
// caller holds sh.mu.
func (sh *turnShard) unqueue(t *turn, w *turnWaiter) bool {
	first := sh.waiting[t]
	switch {
	case first == w && w.next == nil:
		delete(sh.waiting, t)
		return true
	case first == w:
		sh.waiting[t] = w.next
		return true
	}
	for at := first; at != nil; at = at.next {
		if at.next == w {
			at.next = w.next
			return true
		}
	}
	return false
}

// drop removes t, whose id hashes to hash, from sh if it is idle, and
// keeps it, free, for a later take: nobody can reach it then. The caller
// holds sh.mu and, when t.users is 0, the turn or no claim on it: count
// and unsettled are then stable.
func (sh *turnShard) drop(t *turn, hash uint64) {
	if t.users != 0 || t.count != 0 || t.unsettled != 0 || sh.turns == nil {
		return
	}
	switch {
	case sh.turns[hash] == t:
		delete(sh.turns, hash)
	case sh.clash[t.id] == t:
		delete(sh.clash, t.id)
	default:
		return
	}
	t.id, t.hold, t.answered = holdID{}, nil, 0
	idleTurns.Put(t)
}

// setHold makes h the turn's current hold. The caller has the turn. A hold
// granted after Close collected the Client's holds is ended as they were:
// nothing would end it otherwise until its lease ran out.
func (c *Client) setHold(t *turn, h *hold) {
	sh, _ := c.turns.shard(t.id)
	sh.mu.Lock()
	t.hold = h
	closed := sh.turns == nil
	sh.mu.Unlock()
	if closed {
		h.finish(errHoldClosed)
	}
}

// liveHold returns owner id's live hold in this Client, if it has one:
// its turn has a hold that has not ended; else nil. It neither takes the
// turn (a turn's hold is guarded by its shard's mu too) nor makes one.
func (c *Client) liveHold(id holdID) *hold {
	sh, hash := c.turns.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if t := sh.find(id, hash); t != nil {
		return t.activeHold()
	}
	return nil
}

// live is the count of the turn's hold while it lasts, 0 once it has
// ended: a hold that ended by a loss or its lease keeps its count for its
// owner's Unlock, but holds nothing. So an acquire asks Redis for one
// level above it: levels that an ended hold left in Redis (its Unlock
// failed, or its deadline passed while Redis kept it) are not carried into
// the next, whose count 1 lets them go. The caller has the turn.
func (t *turn) live() int {
	if t.activeHold() == nil {
		return 0
	}
	return t.count
}

// activeHold returns the turn's hold if it has not ended. The caller has
// the turn, or its shard's mu.
func (t *turn) activeHold() *hold {
	if t.hold != nil && t.hold.active() {
		return t.hold
	}
	return nil
}

// releasingAll marks the active hold of t, if any, as under a release to
// no level, which the caller, who has the turn, is about to send: whatever
// the release finds ends the hold (recordRelease, or a failure: unlocked),
// so a renewal that finds the lock gone meanwhile, freed by the release
// itself, does not end it as lost (hold.Lost). The caller has t's turn.
func (t *turn) releasingAll() {
	if h := t.activeHold(); h != nil {
		h.life.mu.Lock()
		h.releasing = true
		h.life.mu.Unlock()
	}
}

// liveLevels returns the levels of id's hold that Redis confirmed, waiting
// for id's turn; 0 when the hold has ended (turn.live).
func (c *Client) liveLevels(ctx context.Context, id holdID) (int, error) {
	t, err := c.take(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer c.give(t)
	return t.live(), nil
}
