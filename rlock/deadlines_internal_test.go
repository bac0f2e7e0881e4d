package rlock

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDueHeapKeepsOrder: however holds are added, moved and taken out,
// the earliest deadline is at the root, every hold knows its place, and
// taking the root out again and again yields the deadlines in order.
func TestDueHeapKeepsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var d dueHeap
	holds := make([]*hold, 200)
	for i := range holds {
		holds[i] = &hold{}
	}
	check := func() {
		for i, e := range d {
			require.Equal(t, i+1, e.h.place, "a hold knows its place")
			if i > 0 {
				require.LessOrEqual(t, d[(i-1)/2].at, e.at, "a parent is due no later than its child")
			}
		}
	}
	for range 5000 {
		h := holds[r.IntN(len(holds))]
		at := time.Duration(r.IntN(1000))
		switch {
		case h.place == 0:
			d = append(d, due{at: at, h: h})
			d.up(len(d) - 1)
		case r.IntN(2) == 0:
			d[h.place-1].at = at
			d.fix(h.place - 1)
		default:
			d.removeAt(h.place - 1)
			require.Zero(t, h.place, "a hold taken out has no place")
		}
		check()
	}
	var order []time.Duration
	for len(d) > 0 {
		order = append(order, d[0].at)
		d.removeAt(0)
		check()
	}
	require.True(t, slices.IsSorted(order), "the root is always the earliest")
}
