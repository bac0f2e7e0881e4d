// Package alarm keeps many deadlines on one timer: a Clock holds items by
// the time each is due, with one time.Timer set for the earliest, and
// hands the items whose time has come to one function. A time.Timer per
// item costs some 170 bytes and two allocations; an item here costs its
// place in a slice.
package alarm

import (
	"sync"
	"time"
)

// Item is what a Clock holds: a pointer to a value that keeps its place in
// the Clock (Place), so that it is moved or taken out in O(log n). An item
// is in at most one Clock.
type Item interface {
	comparable
	// Place returns where the item's place is kept, from 1; 0 when it is
	// in no Clock. Only the Clock writes it, under its lock.
	Place() *int32
}

// Clock is a set of items, each due at a time, and a timer that hands
// every item whose time has come, taken out of the set, to the function
// given to Init. Times are durations on the monotonic clock since the
// process began (Now). Its methods are safe for concurrent use.
type Clock[T Item] struct {
	mu    sync.Mutex
	due   dueHeap[T]
	ring  func([]T)     // what Init was given
	timer *time.Timer   // runs fire; made by the first Set
	armed time.Duration // when timer fires; 0 while stopped
}

// start is the origin of Now, a nanosecond before the package began: Now
// is never 0, which its callers keep for "not yet" or "never".
var start = time.Now().Add(-time.Nanosecond)

// Now is the monotonic time since the process began: a point in time in 8
// bytes rather than a time.Time's 24, and never 0.
func Now() time.Duration {
	return time.Since(start)
}

// At returns t as a time since the process began.
func At(t time.Time) time.Duration {
	return t.Sub(start)
}

// Init sets what the Clock does with the items whose time has come: ring
// is called on the timer's goroutine, outside the Clock's lock, with each
// batch of them. Call it before the first Set.
func (c *Clock[T]) Init(ring func([]T)) {
	c.ring = ring
}

// Set makes at the time x is due, adding x if it is not in the Clock. An
// item due already is handed to ring at once, on the timer's goroutine.
func (c *Clock[T]) Set(x T, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := int(*x.Place()); p == 0 {
		c.due = append(c.due, due[T]{at: at, x: x})
		c.due.up(len(c.due) - 1)
	} else {
		c.due[p-1].at = at
		c.due.fix(p - 1)
	}
	c.armLocked()
}

// Remove takes x out of the Clock, if it is in, and reports whether it was.
func (c *Clock[T]) Remove(x T) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := int(*x.Place())
	if p == 0 {
		return false
	}
	c.due.removeAt(p - 1)
	c.armLocked()
	return true
}

// Len returns how many items are in the Clock.
func (c *Clock[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.due)
}

// armLocked sets the timer for the earliest item, if it is not set for it
// or sooner already, and stops it when no item is left (a timer that fires
// early finds nothing due and is set again). c.mu is held.
func (c *Clock[T]) armLocked() {
	if len(c.due) == 0 {
		if c.armed != 0 {
			c.timer.Stop()
			c.armed = 0
		}
		return
	}
	at := max(c.due[0].at, 1) // 0 means stopped
	if c.armed != 0 && c.armed <= at {
		return
	}
	c.armed = at
	if c.timer == nil {
		c.timer = time.AfterFunc(at-Now(), c.fire)
		return
	}
	c.timer.Reset(at - Now())
}

// fire hands the items whose time has come to ring, and sets the timer
// for the next one.
func (c *Clock[T]) fire() {
	now := Now()
	var passed []T
	c.mu.Lock()
	c.armed = 0
	for len(c.due) > 0 && c.due[0].at <= now {
		passed = append(passed, c.due.removeAt(0))
	}
	c.armLocked()
	c.mu.Unlock()
	if len(passed) > 0 {
		c.ring(passed)
	}
}
