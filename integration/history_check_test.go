package integration

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// holdWindow is one hold of the lock, as the history shows it: from the end
// of the acquire that granted it (the holder knows it holds) to the earlier
// of the start of its final release and the moment the holder saw its lock
// context end with ErrLockLost. In that window the holder may act as the
// only holder; outside it, it must not.
type holdWindow struct {
	proc, owner  string
	token        int64
	acquireStart int64
	start, end   int64   // start is the acquire's end
	lost         bool    // the holder saw its lock context end with ErrLockLost
	released     bool    // its final release was made
	freed        bool    // ... and succeeded
	killed       bool    // its process was killed while it held
	acts         []int64 // start times of what the holder did in the hold's name after acquiring
}

func (w *holdWindow) String() string {
	return fmt.Sprintf("%s token %d [%s, %s]", w.owner, w.token, stamp(w.start), stamp(w.end))
}

// empty reports whether the hold was already lost when its acquire returned.
func (w *holdWindow) empty() bool { return w.end <= w.start }

// holdKey names a hold: an owner whose hold was lost may take a fresh one,
// with another token.
type holdKey struct {
	owner string
	token int64
}

// verdict is what the checks found in one run's history.
type verdict struct {
	ops, holds, sections, lost, staleRejected int
	unfinished                                int // calls a killed process left unfinished (completeCalls)
	guarded, guardedRefused                   int // writes through Do that ran, and that Do refused
	// margin is the least time from a holder seeing its lock lost to the
	// next holder's acquire returning, over holds that were not released
	// after all; -1 without such a loss.
	margin     time.Duration
	violations []string
}

// add adds the verdict on another lock of the same run.
func (v *verdict) add(o verdict) {
	v.ops += o.ops
	v.holds += o.holds
	v.sections += o.sections
	v.lost += o.lost
	v.staleRejected += o.staleRejected
	v.unfinished += o.unfinished
	v.guarded += o.guarded
	v.guardedRefused += o.guardedRefused
	if v.margin < 0 || (o.margin >= 0 && o.margin < v.margin) {
		v.margin = o.margin
	}
	v.violations = append(v.violations, o.violations...)
}

func (v *verdict) violate(format string, args ...any) {
	v.violations = append(v.violations, fmt.Sprintf(format, args...))
}

// storeState is the fenced store and counter as the run left them.
type storeState struct {
	log     []fencedEntry
	counter int64
}

// checkHistory runs every check over a merged history, giving porcupine
// linearizeWithin. Invocations are paired with their completions first
// (completeCalls), so a history may come raw or paired.
func checkHistory(ops []Op, store storeState, linearizeWithin time.Duration) verdict {
	ops = completeCalls(ops)
	v := verdict{ops: len(ops), margin: -1}
	checkRecords(ops, &v)
	holds := buildHolds(ops, &v)
	v.holds = len(holds)
	for _, h := range holds {
		if h.lost {
			v.lost++
		}
	}
	checkExclusion(holds, &v)
	checkTokens(holds, &v)
	checkFencedWrites(ops, holds, store.log, &v)
	checkGuardedWrites(ops, &v)
	checkCounter(ops, store.counter, &v)
	checkLinearizable(ops, linearizeWithin, &v)
	return v
}

// checkRecords reports what the history says outright: anomalies the
// workers saw, and calls left unfinished where no kill explains it.
func checkRecords(ops []Op, v *verdict) {
	for _, op := range ops {
		if op.Kind == opAnomaly {
			v.violate("anomaly: %s: %s at %s", op.Owner, op.Detail, stamp(op.Start))
		}
		if op.Unfinished {
			v.unfinished++
		}
	}
	v.violations = append(v.violations, checkUnfinished(ops, killTimes(ops))...)
}

// buildHolds turns the history into hold windows, ordered by acquire start.
//
// A hold's window ends at the Start of its final release, completed or
// not: a release whose process was killed while it was out (unfinished,
// see completeCalls) may have freed the lock at any moment from its Start
// on, as one that returned may have. Only an acquire that returned opens a
// window; one left unfinished opens none, so it cannot hide an overlap
// between windows that the history does show.
//
// A holder whose process the harness froze (SIGSTOP) cannot act while
// frozen; if, once thawed, it saw its loss before doing anything in the
// hold's name, its window ends where the freeze began. Its lock context was
// due to end during the freeze, and a frozen process is the very case
// fencing tokens exist for.
func buildHolds(ops []Op, v *verdict) []*holdWindow {
	holds := map[holdKey]*holdWindow{}
	for _, op := range ops {
		if op.Kind == opAcquire && op.Outcome == outOK && op.Depth == 1 {
			k := holdKey{op.Owner, op.Token}
			if holds[k] == nil {
				holds[k] = &holdWindow{proc: op.Proc, owner: op.Owner, token: op.Token,
					acquireStart: op.Start, start: op.End, end: math.MaxInt64}
			}
		}
	}
	var freezes []Op
	kills := killTimes(ops) // when each killed process was dead
	for _, op := range ops {
		switch op.Kind {
		case opFreeze:
			freezes = append(freezes, op)
			continue
		case opKill:
			continue
		}
		h := holds[holdKey{op.Owner, op.Token}]
		if h == nil {
			continue
		}
		switch op.Kind {
		case opLost:
			h.lost = true
			h.end = min(h.end, op.End)
		case opRelease:
			if op.Final {
				h.released, h.freed = true, op.Outcome == outOK
				h.end = min(h.end, op.Start)
			} else {
				h.acts = append(h.acts, op.Start)
			}
		case opAcquire:
			if op.Depth == 2 {
				h.acts = append(h.acts, op.Start)
			}
		case opWrite, opSection, opRead, opGuarded:
			if op.Outcome != outSkipped {
				h.acts = append(h.acts, op.Start)
			}
		}
	}
	out := make([]*holdWindow, 0, len(holds))
	for _, h := range holds {
		if at, killed := kills[h.proc]; killed && h.end > at {
			h.end, h.killed = at, true // a dead process holds nothing in its own eyes
		}
		if !h.lost && !h.released && !h.killed {
			v.violate("hold never ended: %s has no final release and no loss", h)
		}
		for _, f := range freezes {
			if f.Proc == h.proc && h.start < f.Start && f.End <= h.end && !actedIn(h, f.Start, h.end) {
				h.end = f.Start
			}
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b *holdWindow) int {
		return cmp.Or(cmp.Compare(a.acquireStart, b.acquireStart), cmp.Compare(a.token, b.token))
	})
	return out
}

// actedIn reports whether h did anything in the hold's name in [from, to).
func actedIn(h *holdWindow, from, to int64) bool {
	return slices.ContainsFunc(h.acts, func(at int64) bool { return at >= from && at < to })
}

// checkExclusion is check 1: no two hold windows overlap. Windows that were
// empty (the hold was lost before its acquire returned) claim nothing. That
// the windows, in time order, carry increasing tokens is checkTokens' part.
// It also measures the margin by which lost holds were seen lost before the
// lock was taken again.
func checkExclusion(holds []*holdWindow, v *verdict) {
	live := slices.DeleteFunc(slices.Clone(holds), (*holdWindow).empty)
	slices.SortFunc(live, func(a, b *holdWindow) int { return cmp.Compare(a.start, b.start) })
	var last *holdWindow // the window reaching furthest so far
	for _, h := range live {
		if last != nil && h.start < last.end {
			v.violate("overlap: %s and %s both held the lock for %v", last, h, time.Duration(min(last.end, h.end)-h.start))
		}
		if last == nil || h.end > last.end {
			last = h
		}
	}
	for _, h := range live {
		if !h.lost || h.freed {
			continue // the next holder came after this one's release, not its loss
		}
		i, _ := slices.BinarySearchFunc(live, h.end, func(w *holdWindow, at int64) int { return cmp.Compare(w.start, at) })
		if i < len(live) {
			if gap := time.Duration(live[i].start - h.end); v.margin < 0 || gap < v.margin {
				v.margin = gap
			}
		}
	}
}

// checkTokens is check 2: tokens strictly increase across successive
// holders. A hold whose acquire began after another's acquire returned was
// granted after it, so its token must be higher.
func checkTokens(holds []*holdWindow, v *verdict) {
	byEnd := slices.Clone(holds) // by acquire end, which is where a window starts
	slices.SortFunc(byEnd, func(a, b *holdWindow) int { return cmp.Compare(a.start, b.start) })
	var before *holdWindow // the highest token of holds whose acquire has returned
	i := 0
	for _, h := range holds { // in acquire-start order
		for ; i < len(byEnd) && byEnd[i].start < h.acquireStart; i++ {
			if before == nil || byEnd[i].token > before.token {
				before = byEnd[i]
			}
		}
		if h.token == 0 {
			continue // lost before its token could be read
		}
		if before != nil && h.token <= before.token {
			v.violate("token order: %s was granted after %s but its token is not higher", h, before)
		}
	}
}

// checkFencedWrites is check 3. A write made in its hold's window must be
// accepted: nobody with a higher token can have written yet. A write made
// after it (by a stale holder) must be rejected once a newer holder has
// written, which is all fencing promises. The store's own log must hold
// strictly increasing tokens, one per accepted write.
func checkFencedWrites(ops []Op, holds []*holdWindow, log []fencedEntry, v *verdict) {
	index := map[holdKey]*holdWindow{}
	for _, h := range holds {
		index[holdKey{h.owner, h.token}] = h
	}
	var writes []Op
	accepted := map[holdKey]bool{}
	unknown := 0
	for _, op := range ops {
		if op.Kind != opWrite || op.Outcome == outSkipped {
			continue
		}
		writes = append(writes, op)
		switch op.Outcome {
		case outOK:
			accepted[holdKey{op.Owner, op.Token}] = true
		case outUnknown:
			unknown++
		}
	}
	for _, op := range writes {
		h := index[holdKey{op.Owner, op.Token}]
		if h == nil {
			v.violate("write outside any hold: %s with token %d", op.Owner, op.Token)
			continue
		}
		inWindow := op.Start >= h.start && op.Start < h.end
		switch {
		case op.Outcome == outFailed && inWindow:
			v.violate("write rejected in its hold's window: %s at %s; someone with a higher token wrote first", h, stamp(op.Start))
		case op.Outcome == outFailed:
			v.staleRejected++
		case op.Outcome == outOK && !inWindow:
			if newer := newerWrite(writes, op); newer != nil {
				v.violate("stale write accepted: %s wrote at %s, after its hold %s ended and after %s wrote token %d",
					op.Owner, stamp(op.Start), h, newer.Owner, newer.Token)
			}
		}
	}
	inLog := map[holdKey]bool{}
	unseen := 0
	for i, e := range log {
		if i > 0 && e.token <= log[i-1].token {
			v.violate("fenced store: accepted token %d after token %d", e.token, log[i-1].token)
		}
		k := holdKey{e.owner, e.token}
		inLog[k] = true
		if !accepted[k] {
			unseen++
		}
	}
	if unseen > unknown {
		v.violate("fenced store: %d writes that no worker saw accepted, but only %d had an unknown outcome", unseen, unknown)
	}
	for k := range accepted {
		if !inLog[k] {
			v.violate("fenced store: the write by %s with token %d was accepted but is missing", k.owner, k.token)
		}
	}
}

// newerWrite returns an accepted write with a higher token than w's that
// returned before w began, if there is one.
func newerWrite(writes []Op, w Op) *Op {
	for i, o := range writes {
		if o.Outcome == outOK && o.Token > w.Token && o.End < w.Start {
			return &writes[i]
		}
	}
	return nil
}

// checkCounter is check 4: every read-then-write of the counter was done
// under the lock, so none was lost: the counter equals the number of
// completed sections, and no two sections read the same value.
func checkCounter(ops []Op, counter int64, v *verdict) {
	reads := map[int64]string{}
	unknown := 0
	for _, op := range ops {
		if op.Kind != opSection {
			continue
		}
		switch op.Outcome {
		case outOK:
			v.sections++
			if other, dup := reads[op.Read]; dup {
				v.violate("lost update: %s and %s both read counter value %d", other, op.Owner, op.Read)
			}
			reads[op.Read] = op.Owner
		case outUnknown:
			unknown++
		}
	}
	if counter < int64(v.sections) || counter > int64(v.sections+unknown) {
		v.violate("counter: %d after %d completed sections (%d unknown)", counter, v.sections, unknown)
	}
}

// stamp formats a CLOCK_MONOTONIC reading for messages.
func stamp(ns int64) string {
	if ns == math.MaxInt64 {
		return "never"
	}
	return fmt.Sprintf("%.6fs", float64(ns)/1e9)
}

// checkGuardedWrites: no write made through Do from an expired hold
// landed. A guarded write that returned must have begun before any hold
// with a higher token was granted (that grant means its own hold had
// ended in Redis), and must have landed after no guarded write of a
// higher token: the entry before it in the lock node's log, which the
// script read in the same step, has no higher token.
func checkGuardedWrites(ops []Op, v *verdict) {
	var grants []Op
	for _, op := range ops {
		if op.Kind == opAcquire && op.Outcome == outOK && op.Depth == 1 {
			grants = append(grants, op)
		}
	}
	for _, op := range ops {
		if op.Kind == opGuarded && op.Outcome == outFailed {
			v.guardedRefused++
		}
		if op.Kind != opGuarded || op.Outcome != outOK {
			continue
		}
		v.guarded++
		if op.Read > op.Token {
			v.violate("guarded write by %s with token %d landed after one with token %d", op.Owner, op.Token, op.Read)
		}
		for _, g := range grants {
			if g.Token > op.Token && g.End < op.Start {
				v.violate("guarded write by %s with token %d at %s landed although %s was granted token %d at %s",
					op.Owner, op.Token, stamp(op.Start), g.Owner, g.Token, stamp(g.End))
				break
			}
		}
	}
}
