package watchdog

import "time"

// Tick granularity: a renewal period is cut into ticksPerPeriod ticks, but
// no tick is shorter than minTick, so that holds registered close together
// share a round and a short lease does not make the goroutine spin.
const (
	ticksPerPeriod = 8
	minTick        = 10 * time.Millisecond
)

// wheel is a hashed timer wheel of holds. Time is cut into ticks counted
// from start, and a hold waits in the bucket of the tick at which its next
// renewal is due. Each bucket is an intrusive doubly linked list, so that
// scheduling, unlinking and draining a hold allocate nothing.
//
// Due ticks are rounded down, so a renewal is sent up to one tick early but
// never later than a period after the one before (unless the goroutine is
// late itself).
type wheel struct {
	start   time.Time // tick 0
	tick    time.Duration
	period  int64    // ticks from one renewal of a hold to the next, at least 1
	buckets []*Entry // list heads; tick t lives in buckets[t%len(buckets)]
	cursor  int64    // the last tick drained
}

// newWheel returns a wheel, starting now, for renewals every period.
func newWheel(period time.Duration) wheel {
	tick := min(max(period/ticksPerPeriod, minTick), period)
	n := int64(period / tick)
	// One bucket more than a period, so that in the steady state a hold
	// scheduled a full period ahead does not share the bucket being drained.
	return wheel{start: time.Now(), tick: tick, period: n, buckets: make([]*Entry, n+1)}
}

// tickOf returns the tick that t falls in.
func (wh *wheel) tickOf(t time.Time) int64 {
	return int64(t.Sub(wh.start) / wh.tick)
}

// at returns the time at which tick n begins.
func (wh *wheel) at(n int64) time.Time {
	return wh.start.Add(time.Duration(n) * wh.tick)
}

// schedule puts h in the bucket of tick due, or of the next tick to drain if
// due has already been drained.
func (wh *wheel) schedule(h *Entry, due int64) {
	h.due = max(due, wh.cursor+1)
	i := h.due % int64(len(wh.buckets))
	h.prev, h.next = nil, wh.buckets[i]
	if h.next != nil {
		h.next.prev = h
	}
	wh.buckets[i] = h
}

// unlink takes h out of its bucket.
func (wh *wheel) unlink(h *Entry) {
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		wh.buckets[h.due%int64(len(wh.buckets))] = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	}
	h.prev, h.next = nil, nil
}

// drain takes every hold due by tick upTo out of the wheel, appends them to
// into, and returns it. It visits the buckets of the ticks since the last
// drain, every bucket at most once however late it is; a hold a lap or more
// ahead stays where it is.
func (wh *wheel) drain(upTo int64, into []*Entry) []*Entry {
	if upTo <= wh.cursor {
		return into
	}
	n := int64(len(wh.buckets))
	last := wh.cursor + min(upTo-wh.cursor, n)
	for t := wh.cursor + 1; t <= last; t++ {
		for h := wh.buckets[t%n]; h != nil; {
			next := h.next
			if h.due <= upTo {
				wh.unlink(h)
				into = append(into, h)
			}
			h = next
		}
	}
	wh.cursor = upTo
	return into
}
