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
