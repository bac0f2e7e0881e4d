package integration

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The reader-writer model of the checks: read holds may overlap each
// other, a write hold overlaps no hold at all. Write tokens strictly
// increase across successive writers; a read token is the token of the
// latest write hold granted before it, so it is at least that of every
// write hold whose acquire returned before the read's began.

// rwVerdict is a verdict with the readers' count.
type rwVerdict struct {
	verdict
	reads int
}

// checkRWHistory runs the reader-writer checks over a merged history of
// an RWMutex run: the Mutex checks where they hold for writers alone
// (tokens, fenced writes, the counter), and the reader-writer exclusion.
func checkRWHistory(ops []Op, store storeState) rwVerdict {
	ops = completeCalls(ops)
	v := rwVerdict{verdict: verdict{ops: len(ops), margin: -1}}
	checkRecords(ops, &v.verdict)
	for _, op := range ops {
		if op.Kind == opRead && op.Outcome == outOK {
			v.reads++
		}
	}
	holds := buildHolds(ops, &v.verdict)
	v.holds = len(holds)
	for _, h := range holds {
		if h.lost {
			v.lost++
		}
	}
	writes := slices.DeleteFunc(slices.Clone(holds), (*holdWindow).reads)
	checkRWExclusion(holds, &v.verdict)
	checkTokens(writes, &v.verdict)
	checkReadTokens(holds, &v.verdict)
	checkFencedWrites(ops, holds, store.log, &v.verdict)
	checkGuardedWrites(ops, &v.verdict)
	checkCounter(ops, store.counter, &v.verdict)
	return v
}

// reads reports whether h is a read hold: its owner is a reader worker's.
func (h *holdWindow) reads() bool {
	_, rest, _ := strings.Cut(h.owner, ".") // after the process
	_, worker, _ := strings.Cut(rest, ".")  // after the Client
	return strings.HasPrefix(worker, readerTag)
}

// checkRWExclusion: no write window overlaps another window, read or
// write. Empty windows claim nothing.
func checkRWExclusion(holds []*holdWindow, v *verdict) {
	live := slices.DeleteFunc(slices.Clone(holds), (*holdWindow).empty)
	slices.SortFunc(live, func(a, b *holdWindow) int { return cmp.Compare(a.start, b.start) })
	for i, h := range live {
		for _, o := range live[i+1:] {
			if o.start >= h.end {
				continue
			}
			if !h.reads() || !o.reads() {
				v.violate("overlap: %s and %s held the lock together for %v, not both reading", h, o, time.Duration(min(h.end, o.end)-o.start))
			}
		}
	}
}

// checkReadTokens: a read hold's token is at least the token of every
// write hold whose acquire returned before the read's acquire began.
func checkReadTokens(holds []*holdWindow, v *verdict) {
	for _, r := range holds {
		if !r.reads() || r.token == 0 {
			continue
		}
		for _, w := range holds {
			if !w.reads() && w.token > r.token && w.start < r.acquireStart {
				v.violate("read token: %s began after %s was granted, but its token is lower", r, w)
			}
		}
	}
}
