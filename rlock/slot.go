package rlock

import "context"

// holdID names one owner's hold on one lock within a Client.
type holdID struct {
	key   string // the lock's hash key
	field string // <clientID>:<ownerToken>, and the kind's suffix
}

// slot is one owner's standing on one lock in this Client: the hold count
// Redis confirmed, the request whose reply never came, and the hold that
// lock contexts carry. The owner's calls on the lock take turns: requests
// of one owner on one lock are never in flight together, whatever goroutines
// share the owner. That is what lets every request carry an absolute count,
// lets a resend fence off the copies before it, and keeps concurrent
// re-entries with different leases from undoing each other.
//
// A slot lives in its Client's map while a goroutine uses it, a level is
// held, or a request's outcome is still unsettled.
type slot struct {
	id   holdID
	turn chan struct{} // holds a token while a goroutine has the turn

	// Guarded by the turn.
	count     int    // levels Redis granted this owner and it has not left
	unsettled uint64 // seq of the latest request whose reply never came, or 0

	// Guarded by Client.mu (and written under the turn too).
	users int   // goroutines that have or wait for the turn
	hold  *hold // the current hold; nil before the first grant
}

// take waits for id's turn and returns its slot, or fails when ctx is done
// first or the Client is closed. The caller must give the slot back.
func (c *Client) take(ctx context.Context, id holdID) (s *slot, err error) {
	c.mu.Lock()
	if c.slots == nil {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	s = c.slots[id]
	if s == nil {
		s = &slot{id: id, turn: make(chan struct{}, 1)}
		c.slots[id] = s
	}
	s.users++
	c.mu.Unlock()

	select {
	case s.turn <- struct{}{}:
		return s, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.closed:
		err = ErrClosed
	}
	c.mu.Lock()
	s.users--
	c.drop(s)
	c.mu.Unlock()
	return nil, err
}

// give ends the caller's turn on s, dropping s from the Client when nobody
// uses it and nothing is held or unsettled.
func (c *Client) give(s *slot) {
	c.mu.Lock()
	s.users--
	c.drop(s)
	c.mu.Unlock()
	<-s.turn
}

// drop removes s from the Client's map if it is idle. The caller holds c.mu
// and, when s.users is 0, the turn or no claim on it: count and unsettled
// are then stable.
func (c *Client) drop(s *slot) {
	if s.users == 0 && s.count == 0 && s.unsettled == 0 && c.slots[s.id] == s {
		delete(c.slots, s.id)
	}
}

// setHold makes h the slot's current hold. The caller has the turn. A hold
// granted after Close collected the Client's holds is ended as they were:
// nothing would end it otherwise until its lease ran out.
func (c *Client) setHold(s *slot, h *hold) {
	c.mu.Lock()
	s.hold = h
	closed := c.slots == nil
	c.mu.Unlock()
	if closed {
		h.finish(errHoldClosed)
	}
}

// activeHold returns the slot's hold if it has not ended. The caller has
// the turn.
func (s *slot) activeHold() *hold {
	if s.hold != nil && s.hold.active() {
		return s.hold
	}
	return nil
}
