package rlock

import (
	"sync"
	"time"
)

// deadlines is a Client's holds by local deadline (see hold.armLocked),
// with one timer, set for the earliest: a timer per hold cost some 170
// bytes and two allocations per Lock. When the timer fires, every hold
// whose deadline has passed ends, its lock contexts all done before any
// hold lets go of its watchdog entry (which may wait for a renewal round).
type deadlines struct {
	mu    sync.Mutex
	due   dueHeap
	timer *time.Timer   // runs fire; made by the first add
	armed time.Duration // when timer fires (sinceStart); 0 while stopped
}

// dueHeap is a min-heap of holds by deadline; each hold knows its place
// (hold.place), so that it is moved or taken out in O(log n). (Written out
// rather than with container/heap, whose Push boxes each element.)
type dueHeap []due

// due is a hold in the heap, at its deadline (sinceStart).
type due struct {
	at time.Duration
	h  *hold
}

// put places e at i, telling its hold.
func (d dueHeap) put(i int, e due) {
	d[i] = e
	e.h.place = i + 1
}

// up moves the element at i towards the root until its parent is due no
// later.
func (d dueHeap) up(i int) {
	e := d[i]
	for i > 0 {
		p := (i - 1) / 2
		if d[p].at <= e.at {
			break
		}
		d.put(i, d[p])
		i = p
	}
	d.put(i, e)
}

// down moves the element at i away from the root until its children are
// due no sooner.
func (d dueHeap) down(i int) {
	e := d[i]
	for {
		c := 2*i + 1
		if c >= len(d) {
			break
		}
		if c+1 < len(d) && d[c+1].at < d[c].at {
			c++
		}
		if e.at <= d[c].at {
			break
		}
		d.put(i, d[c])
		i = c
	}
	d.put(i, e)
}

// fix restores the order after the element at i changed.
func (d dueHeap) fix(i int) {
	h := d[i].h
	d.up(i)
	d.down(h.place - 1)
}

// removeAt takes out the element at i and returns its hold.
func (d *dueHeap) removeAt(i int) *hold {
	h := (*d)[i].h
	last := len(*d) - 1
	if i != last {
		(*d)[i] = (*d)[last]
	}
	(*d)[last] = due{}
	*d = (*d)[:last]
	if i != last {
		d.fix(i)
	}
	h.place = 0
	return h
}

// set makes at the deadline of h, which it ends when it passes. The caller
// holds h.mu.
func (ds *deadlines) set(h *hold, at time.Duration) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if h.place == 0 {
		ds.due = append(ds.due, due{at: at, h: h})
		ds.due.up(len(ds.due) - 1)
	} else {
		ds.due[h.place-1].at = at
		ds.due.fix(h.place - 1)
	}
	ds.armLocked()
}

// remove takes h out, if it is in. The caller holds h.mu.
func (ds *deadlines) remove(h *hold) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if h.place == 0 {
		return
	}
	ds.due.removeAt(h.place - 1)
	ds.armLocked()
}

// armLocked sets the timer for the earliest deadline, if it is not set for
// it or sooner already, and stops it when no hold is left (a timer that
// fires early finds nothing due and is set again). ds.mu is held.
func (ds *deadlines) armLocked() {
	if len(ds.due) == 0 {
		if ds.armed != 0 {
			ds.timer.Stop()
			ds.armed = 0
		}
		return
	}
	at := max(ds.due[0].at, 1) // 0 means stopped
	if ds.armed != 0 && ds.armed <= at {
		return
	}
	ds.armed = at
	if ds.timer == nil {
		ds.timer = time.AfterFunc(at-sinceStart(), ds.fire)
		return
	}
	ds.timer.Reset(at - sinceStart())
}

// fire ends every hold whose deadline has passed, and sets the timer for
// the next one.
func (ds *deadlines) fire() {
	now := sinceStart()
	var passed []*hold
	ds.mu.Lock()
	ds.armed = 0
	for len(ds.due) > 0 && ds.due[0].at <= now {
		passed = append(passed, ds.due.removeAt(0))
	}
	ds.armLocked()
	ds.mu.Unlock()

	ended := passed[:0]
	for _, h := range passed {
		if h.end(errDeadlinePassed) {
			h.c.cfg.logger.Warn("rlock: lock lost: lease deadline passed", "key", h.id.key)
			ended = append(ended, h)
		}
	}
	for _, h := range ended {
		h.letGo(errDeadlinePassed)
	}
}
