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
// held, or a request's outcome is still unsettled.
type turn struct {
	id    holdID
	sh    *turnShard    // the part of the table it lives in
	token chan struct{} // holds a token while a goroutine has the turn

	// Guarded by the turn.
	count     int    // levels Redis granted this owner and it has not left
	unsettled uint64 // seq of the latest request whose reply never came, or 0

	// Guarded by sh.mu (and written in the turn too).
	users int   // goroutines that have or wait for the turn
	hold  *hold // the current hold; nil before the first grant
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
type turnShard struct {
	mu    sync.Mutex
	turns map[holdID]*turn // nil once the Client is closed
	_     [48]byte
}

var turnSeed = maphash.MakeSeed()

// init makes the table's maps.
func (tt *turnTable) init() {
	for i := range tt.shards {
		tt.shards[i].turns = make(map[holdID]*turn)
	}
}

// shard returns the part of the table where the turn of id lives.
func (tt *turnTable) shard(id holdID) *turnShard {
	return &tt.shards[maphash.Comparable(turnSeed, id)%turnShards]
}

// close closes the table to new turns and returns the holds of its turns.
func (tt *turnTable) close() []*hold {
	var holds []*hold
	for i := range tt.shards {
		sh := &tt.shards[i]
		sh.mu.Lock()
		for _, t := range sh.turns {
			if t.hold != nil {
				holds = append(holds, t.hold)
			}
		}
		sh.turns = nil
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
		for id, t := range sh.turns {
			if id.key == key && t.hold != nil {
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
		n += len(sh.turns)
		sh.mu.Unlock()
	}
	return n
}

// idleTurns keeps turns dropped from their Client for the next ones: an
// uncontended Lock+Unlock makes one and drops it, and then allocates none.
var idleTurns = sync.Pool{New: func() any { return &turn{token: make(chan struct{}, 1)} }}

// take waits for id's turn, or fails when ctx is done first or the Client
// is closed. The caller must give the turn back.
func (c *Client) take(ctx context.Context, id holdID) (t *turn, err error) {
	sh := c.turns.shard(id)
	sh.mu.Lock()
	t = sh.enter(id)
	sh.mu.Unlock()
	if t == nil {
		return nil, ErrClosed
	}

	select { // a free turn first, without making ctx's Done channel
	case t.token <- struct{}{}:
		return t, nil
	default:
	}
	select {
	case t.token <- struct{}{}:
		return t, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.closed:
		err = ErrClosed
	}
	sh.mu.Lock()
	t.users--
	dropped := t.drop()
	sh.mu.Unlock()
	if dropped {
		recycle(t)
	}
	return nil, err
}

// tryTake returns id's turn if it is free, and nil if a goroutine has it
// or the Client is closed: for a caller that must not wait (a release
// that hands its lock to a waiter, handoff.go). The caller must give the
// turn back.
func (c *Client) tryTake(id holdID) *turn {
	sh := c.turns.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.enter(id)
	if t == nil {
		return nil
	}
	select {
	case t.token <- struct{}{}:
		return t
	default:
	}
	t.users--
	if t.drop() {
		recycle(t)
	}
	return nil
}

// enter returns id's turn, made if needed, counting the caller among its
// users; nil once the Client is closed. The caller holds sh.mu.
func (sh *turnShard) enter(id holdID) *turn {
	if sh.turns == nil {
		return nil
	}
	t := sh.turns[id]
	if t == nil {
		t = idleTurns.Get().(*turn)
		t.id, t.sh = id, sh
		sh.turns[id] = t
	}
	t.users++
	return t
}

// give ends the caller's turn, dropping t from the Client when nobody uses
// it and nothing is held or unsettled.
func (c *Client) give(t *turn) {
	sh := t.sh
	sh.mu.Lock()
	t.users--
	dropped := t.drop()
	sh.mu.Unlock()
	<-t.token
	if dropped {
		recycle(t)
	}
}

// drop removes t from its table if it is idle, and reports whether it
// did: nobody can reach t then, and once its token is back the caller
// recycles it. The caller holds t.sh.mu and, when t.users is 0, the turn or
// no claim on it: count and unsettled are then stable.
func (t *turn) drop() bool {
	if t.users == 0 && t.count == 0 && t.unsettled == 0 && t.sh.turns[t.id] == t {
		delete(t.sh.turns, t.id)
		return true
	}
	return false
}

// recycle keeps the dropped turn t, its token free, for a later take.
func recycle(t *turn) {
	t.id, t.sh, t.hold = holdID{}, nil, nil
	idleTurns.Put(t)
}

// setHold makes h the turn's current hold. The caller has the turn. A hold
// granted after Close collected the Client's holds is ended as they were:
// nothing would end it otherwise until its lease ran out.
func (c *Client) setHold(t *turn, h *hold) {
	t.sh.mu.Lock()
	t.hold = h
	closed := t.sh.turns == nil
	t.sh.mu.Unlock()
	if closed {
		h.finish(errHoldClosed)
	}
}

// activeHold returns the turn's hold if it has not ended. The caller has
// the turn.
func (t *turn) activeHold() *hold {
	if t.hold != nil && t.hold.active() {
		return t.hold
	}
	return nil
}

// confirmed returns the hold count of id that Redis confirmed, waiting for
// id's turn.
func (c *Client) confirmed(ctx context.Context, id holdID) (int, error) {
	t, err := c.take(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer c.give(t)
	return t.count, nil
}
