package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redistest"
)

// TestReliabilityClockJump runs the lock's Redis on a fake wall clock
// (an LD_PRELOAD library, redistest.FakeClock) and, while a holder holds the lock, makes that clock jump
// forward by twice the lease, as a bad NTP step would. Redis then expires
// the lock at once, early by the jump: leases end early, and another owner
// takes the lock while the holder's context is still live, until its next
// renewal (up to lease/3 later) finds the key gone. rlock's deadlines run
// on the client's monotonic clock and cannot see Redis's clock: no client
// can promise exclusion across such a jump. What must hold is fencing: the
// store refuses the holder's write once a newer holder has written, even
// while the holder still believes it holds the lock (the checker's "write
// rejected in its hold's window"), and the holder must learn of its loss at
// that renewal (checkLossNoticed). The overlaps are counted and logged, not
// failed: they are what a jump costs.
func TestReliabilityClockJump(t *testing.T) {
	runScenario(t, scenario{name: "redis-clock-jump", deploy: deployFakeClock, victim: victimLocal,
		fault: (*run).jumpClock, tolerate: overlapCosts, after: (*run).checkLossNoticed})
}

// deployFakeClock is deploySingle with the node on a fake clock.
func deployFakeClock(t *testing.T, _ scenario, r *run) deployment {
	r.clock = redistest.NewFakeClock(t)
	r.lock = redistest.New(t, redistest.Config{Backend: redistest.Process, Env: r.clock.Env()})
	return deployment{near: r.lock.Addr(), far: r.lock.Addr()}
}

// jumpClock moves the lock node's clock forward by the fault's length, and
// leaves the holders as long again to notice.
func (r *run) jumpClock(context.Context) (Op, error) {
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: fmt.Sprintf("redis clock jumped %v forward", r.fault)}
	err := r.clock.Jump(r.fault)
	time.Sleep(r.fault) // the fault lasts r.fault
	op.End = monoNow()
	return op, err
}
