package integration

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The counting-semaphore check of a recorded history: at no instant do more
// workers believe they hold a permit than there are permits.
//
// A worker believes it holds a permit from the end of an acquire that
// returned one until the start of its release, or until its permit context
// ended with ErrLockLost (opLost), or until its process was killed (an
// opKill of that process), whichever comes first. A release invoked but
// left unfinished by the kill (see completeCalls) ends the belief at its
// start too: it may have given the permit back from then on. Acquires that
// failed, returned an error or never returned believe nothing: rlock
// settles a given-up request, and the run checks afterwards that all
// permits are free again.

// permitWindow is one permit some worker believed it held.
type permitWindow struct {
	owner      string
	start, end int64
}

// semaphoreVerdict is what checkSemaphore found.
type semaphoreVerdict struct {
	most       int      // the most permits believed held at once
	violations []string // each instant more were believed held than permits
	// comeback is how long after each kill the live workers first held
	// all permits at once (-1: never): a killed process's permits came
	// back by then.
	comeback []int64
}

// checkSemaphore checks ops against a semaphore of permits; runEnd closes
// the windows of permits still held when the run stopped.
func checkSemaphore(ops []Op, permits int, runEnd int64) semaphoreVerdict {
	ops = completeCalls(ops)
	var v semaphoreVerdict
	// A semaphore run records its kill when it sends SIGKILL, not once the
	// process is dead: any call of a killed process may be unfinished.
	dead := map[string]int64{}
	for proc := range killTimes(ops) {
		dead[proc] = math.MaxInt64
	}
	v.violations = checkUnfinished(ops, dead)
	windows, kills := permitWindows(ops, runEnd)
	type edge struct {
		at    int64
		delta int
		owner string
	}
	var edges []edge
	for _, w := range windows {
		if w.end > w.start {
			edges = append(edges, edge{w.start, 1, w.owner}, edge{w.end, -1, w.owner})
		}
	}
	// At one instant, ends come before starts: a window is half-open.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return a.delta - b.delta
	})
	full := []int64{} // instants at which all permits were held
	n := 0
	for _, e := range edges {
		n += e.delta
		if n > v.most {
			v.most = n
		}
		if n > permits {
			v.violations = append(v.violations, fmt.Sprintf("%d permits believed held at %s (%s took one)", n, stamp(e.at), e.owner))
		}
		if n == permits && e.delta > 0 {
			full = append(full, e.at)
		}
	}
	for _, k := range kills {
		back := int64(-1)
		if i, _ := slices.BinarySearch(full, k); i < len(full) {
			back = full[i] - k
		}
		v.comeback = append(v.comeback, back)
	}
	return v
}

// permitWindows returns the windows of belief in ops, and the instants
// processes were killed.
func permitWindows(ops []Op, runEnd int64) ([]permitWindow, []int64) {
	killed := map[string]int64{}
	var kills []int64
	for _, op := range ops {
		if op.Kind == opKill {
			killed[op.Proc] = op.Start
			kills = append(kills, op.Start)
		}
	}
	slices.Sort(kills)
	ends := map[string]int64{} // owner -> end of its belief
	for _, op := range ops {
		switch op.Kind {
		case opRelease, opLost:
			if e, ok := ends[op.Owner]; !ok || op.Start < e {
				ends[op.Owner] = op.Start
			}
		}
	}
	var windows []permitWindow
	for _, op := range ops {
		if op.Kind != opAcquire || op.Outcome != outOK {
			continue
		}
		end, ok := ends[op.Owner]
		if !ok {
			end = runEnd
		}
		if k, ok := killed[op.Proc]; ok && k < end {
			end = k
		}
		windows = append(windows, permitWindow{owner: op.Owner, start: op.End, end: end})
	}
	return windows, kills
}

// TestCheckSemaphoreSynthetic: the check counts overlapping beliefs, ends
// them at release, loss and kill, and tells when a killed process's
// permits came back.
func TestCheckSemaphoreSynthetic(t *testing.T) {
	acq := func(proc, owner string, end int64) Op {
		return Op{Kind: opAcquire, Proc: proc, Owner: owner, Start: end - 1, End: end, Outcome: outOK}
	}
	rel := func(owner string, start int64) Op {
		return Op{Kind: opRelease, Owner: owner, Start: start, End: start + 1}
	}
	ops := []Op{
		acq("p", "a", 10), rel("a", 20),
		acq("p", "b", 15), {Kind: opLost, Owner: "b", Start: 18, End: 18}, rel("b", 30),
		acq("c0", "c", 12), {Kind: opKill, Proc: "c0", Start: 19, End: 19},
		acq("p", "d", 20), rel("d", 40), // starts as a ends: no overlap
		{Kind: opAcquire, Proc: "p", Owner: "e", Start: 11, End: 25, Outcome: outUnknown},
		acq("p", "f", 22), rel("f", 24),
	}
	v := checkSemaphore(ops, 3, 100)
	assert.Empty(t, v.violations, "at most 3 at once: a, b, c; then d and f")
	assert.Equal(t, 3, v.most)
	assert.Equal(t, []int64{-1}, v.comeback, "after the kill at 19, never 3 held at once again")

	v = checkSemaphore(append(ops, acq("p", "g", 23), rel("g", 50)), 2, 100)
	assert.NotEmpty(t, v.violations, "a, b and c overlap on 2 permits")
	v = checkSemaphore(append(ops, acq("p", "g", 23), rel("g", 50)), 3, 100)
	assert.Empty(t, v.violations)
	assert.Equal(t, []int64{4}, v.comeback, "d, f and g held all 3 at 23, 4 after the kill")
}

// TestCheckSemaphoreUnfinishedRelease: on one permit, a worker of the
// killed process c0 invokes its release, which gives the permit back, and
// another worker of c0 takes it before the kill, the release never having
// returned. With its invocation recorded, the first belief ends where the
// release began; without, it lasts until the kill, and the two overlap.
func TestCheckSemaphoreUnfinishedRelease(t *testing.T) {
	shape := func(invoked bool) []Op {
		ops := []Op{{Kind: opAcquire, Proc: "c0", Owner: "x", Start: 5, End: 10, Outcome: outOK}}
		if invoked {
			ops = append(ops, Op{Kind: opRelease, Proc: "c0", Owner: "x", Start: 12, Final: true, Call: 1, Outcome: outInvoked})
		}
		return append(ops,
			Op{Kind: opAcquire, Proc: "c0", Owner: "y", Start: 8, End: 14, Outcome: outOK},
			Op{Kind: opKill, Proc: "c0", Start: 20, End: 20},
			Op{Kind: opAcquire, Proc: "p", Owner: "z", Start: 21, End: 30, Outcome: outOK},
			Op{Kind: opRelease, Proc: "p", Owner: "z", Start: 40, End: 41, Outcome: outOK})
	}
	assert.Empty(t, checkSemaphore(shape(true), 1, 100).violations, "x gave its permit back from 12 on")
	assert.NotEmpty(t, checkSemaphore(shape(false), 1, 100).violations, "x and y both believed they held until the kill")

	unkilled := slices.DeleteFunc(shape(true), func(op Op) bool { return op.Kind == opKill })
	v := checkSemaphore(unkilled, 2, 100)
	assert.Equal(t, []string{"unfinished: x release (token 0) invoked at 0.000000s never returned, and process c0 was not killed"}, v.violations)
}
