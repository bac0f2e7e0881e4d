package integration

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/rlock/rlock/rlock"
)

// TestReliabilityFairHolderStopped is TestReliabilityHolderStopped with
// FairMutex: a process whose workers hold and wait for the lock is frozen
// for longer than the lease, so its holder loses the lock and its queued
// waiters their places; the history must show everything the Mutex runs
// show, and first come, first served wherever no fault intervened.
func TestReliabilityFairHolderStopped(t *testing.T) {
	runScenario(t, scenario{name: "fair-holder-stopped", victim: victimChild, fault: (*run).stopHolder, fair: true})
}

// lockOf is the lock called name that cfg's workers take through the
// Clients of one Clients entry, and whether worker j of the entry only
// reads: a Mutex, a FairMutex, an RWMutex whose first worker writes and the
// others read, or, in modeRedLock, a RedLock over the entry's masters.
func lockOf(set []*rlock.Client, cfg procConfig, name string, j int) (holdLocker, bool) {
	c := set[0]
	switch {
	case cfg.Mode == modeRedLock:
		mutexes := make([]*rlock.Mutex, len(set))
		for i, c := range set {
			mutexes[i] = c.Mutex(name)
		}
		return redLocker{rlock.NewRedLock(mutexes...), mutexes}, false
	case cfg.Fair:
		return c.FairMutex(name), false
	case cfg.RW && j > 0:
		return readLocker{c.RWMutex(name)}, true
	case cfg.RW:
		return c.RWMutex(name), false
	}
	return c.Mutex(name), false
}

const (
	// fifoSlack is how long after its acquire began a waiter is surely
	// queued: its first ask, a subscription and the ask that queues it,
	// on a loaded machine.
	fifoSlack = 250 * time.Millisecond
	// fifoShadow is how long after a fault a waiter may still lose its
	// place: its entry's own lease ran out while its process was frozen or
	// cut off, or Redis forgot the queue.
	fifoShadow = 2 * time.Second
)

// checkFIFO checks first come, first served: an acquire that began
// fifoSlack after another one began, while that one waited, must not be
// handed the lock before it. Fencing tokens give the order in which Redis
// handed the lock out. Acquires during a fault or in its shadow are not
// judged: a fault may rightly cost a waiter its place.
func checkFIFO(ops []Op, v *verdict) {
	var faults [][2]int64
	var taken []Op
	for _, op := range ops {
		switch {
		case op.Kind == opFault || op.Kind == opFreeze:
			faults = append(faults, [2]int64{op.Start, op.End + fifoShadow.Nanoseconds()})
		case op.Kind == opAcquire && op.Outcome == outOK && op.Depth == 1 && op.Token != 0:
			// (Token 0: lost before the holder could read its token.)
			taken = append(taken, op)
		}
	}
	faulty := func(op Op) bool {
		return slices.ContainsFunc(faults, func(f [2]int64) bool { return op.Start <= f[1] && op.End >= f[0] })
	}
	slices.SortFunc(taken, func(a, b Op) int { return cmp.Compare(a.Token, b.Token) })
	var latest *Op // of the acquires handed the lock so far, the one that began last
	for i := range taken {
		a := &taken[i]
		if latest != nil && latest.Start > a.Start+fifoSlack.Nanoseconds() && !faulty(*a) {
			v.violate("fifo: %s began at %s and waited, but %s, which began at %s, was handed the lock first (token %d before %d)",
				a.Owner, stamp(a.Start), latest.Owner, stamp(latest.Start), latest.Token, a.Token)
		}
		if latest == nil || a.Start > latest.Start {
			latest = a
		}
	}
}
