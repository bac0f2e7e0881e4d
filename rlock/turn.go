package rlock

import (
	"context"
	"fmt"
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
// A turn lives in its Client's map while a goroutine uses it, a level is
// held, or a request's outcome is still unsettled.
type turn struct {
	id    holdID
	token chan struct{} // holds a token while a goroutine has the turn

	// Guarded by the turn.
	count     int    // levels Redis granted this owner and it has not left
	unsettled uint64 // seq of the latest request whose reply never came, or 0

	// Guarded by Client.mu (and written in the turn too).
	users int   // goroutines that have or wait for the turn
	hold  *hold // the current hold; nil before the first grant
}

// idleTurns keeps turns dropped from their Client for the next ones: an
// uncontended Lock+Unlock makes one and drops it, and then allocates none.
var idleTurns = sync.Pool{New: func() any { return &turn{token: make(chan struct{}, 1)} }}

// take waits for id's turn, or fails when ctx is done first or the Client
// is closed. The caller must give the turn back.
func (c *Client) take(ctx context.Context, id holdID) (t *turn, err error) {
	c.mu.Lock()
	if c.turns == nil {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	t = c.turns[id]
	if t == nil {
		t = idleTurns.Get().(*turn)
		t.id = id
		c.turns[id] = t
	}
	t.users++
	c.mu.Unlock()

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
	c.mu.Lock()
	t.users--
	dropped := c.drop(t)
	c.mu.Unlock()
	if dropped {
		recycle(t)
	}
	return nil, err
}

// give ends the caller's turn, dropping t from the Client when nobody uses
// it and nothing is held or unsettled.
func (c *Client) give(t *turn) {
	c.mu.Lock()
	t.users--
	dropped := c.drop(t)
	c.mu.Unlock()
	<-t.token
	if dropped {
		recycle(t)
	}
}

// drop removes t from the Client's map if it is idle, and reports whether
// it did: nobody can reach t then, and once its token is back the caller
// recycles it. The caller holds c.mu and, when t.users is 0, the turn or no
// claim on it: count and unsettled are then stable.
func (c *Client) drop(t *turn) bool {
	if t.users == 0 && t.count == 0 && t.unsettled == 0 && c.turns[t.id] == t {
		delete(c.turns, t.id)
		return true
	}
	return false
}

// recycle keeps the dropped turn t, its token free, for a later take.
func recycle(t *turn) {
	t.id, t.hold = holdID{}, nil
	idleTurns.Put(t)
}

// setHold makes h the turn's current hold. The caller has the turn. A hold
// granted after Close collected the Client's holds is ended as they were:
// nothing would end it otherwise until its lease ran out.
func (c *Client) setHold(t *turn, h *hold) {
	c.mu.Lock()
	t.hold = h
	closed := c.turns == nil
	c.mu.Unlock()
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
