package rlock

import (
	"context"
	"time"
)

// LocalDeadline reports, to the tests of package rlock_test, the local
// deadline of the hold nearest to lock context ctx, on alarm's clock: when
// its Client ends it unless a renewal moves it on. ok is false when ctx
// carries no hold. A test that times when a goroutine saw ctx done times
// the scheduler too; this is the moment rlock chose.
func LocalDeadline(ctx context.Context) (deadline time.Duration, ok bool) {
	h, _ := nearestBound(ctx)
	if h == nil {
		return 0, false
	}
	h.life.mu.Lock()
	defer h.life.mu.Unlock()
	return h.deadline, true
}

// Parked reports, to the tests of package rlock_test, how many of m's
// Client's waiters (m a Mutex or a FairMutex) are asleep in its lot on
// m: a release of that Client
// may claim them as heirs (handoff.go). A test that names an heir waits
// for this rather than for time to pass.
func Parked(m interface{ engine() *lock }) int {
	l := m.engine()
	lot := &l.c.lot
	lot.mu.Lock()
	defer lot.mu.Unlock()
	n := 0
	if e := lot.entry(l.keys.Hash(), false); e != nil {
		for _, p := range e.waiters {
			if p.state == asleep {
				n++
			}
		}
	}
	return n
}
