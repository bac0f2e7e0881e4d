package alarm

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// item is a test Item.
type item struct {
	place int32
	n     int
}

func (x *item) Place() *int32 { return &x.place }

// TestNowNeverZero: Now, read at once, is already above 0, which its
// callers keep for "not yet", and it never goes back; At agrees with it.
func TestNowNeverZero(t *testing.T) {
	first := Now()
	require.Positive(t, first)
	then := time.Now()
	require.GreaterOrEqual(t, At(then), first)
	require.GreaterOrEqual(t, Now(), At(then))
}

// TestHeapKeepsOrder: however items are added, moved and taken out, the
// earliest is at the root, every item knows its place, and taking the root
// out again and again yields the times in order.
func TestHeapKeepsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var d dueHeap[*item]
	items := make([]*item, 200)
	for i := range items {
		items[i] = &item{n: i}
	}
	check := func() {
		for i, e := range d {
			require.Equal(t, int32(i+1), e.x.place, "an item knows its place")
			if i > 0 {
				require.LessOrEqual(t, d[(i-1)/2].at, e.at, "a parent is due no later than its child")
			}
		}
	}
	for range 5000 {
		x := items[r.IntN(len(items))]
		at := time.Duration(r.IntN(1000))
		switch {
		case x.place == 0:
			d = append(d, due[*item]{at: at, x: x})
			d.up(len(d) - 1)
		case r.IntN(2) == 0:
			d[x.place-1].at = at
			d.fix(int(x.place) - 1)
		default:
			d.removeAt(int(x.place) - 1)
			require.Zero(t, x.place, "an item taken out has no place")
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

// TestClockRingsOnTime: each item is handed over once, no sooner than its
// time, and not at all once removed or moved away; the timer stops when
// the Clock is empty.
func TestClockRingsOnTime(t *testing.T) {
	var (
		c    Clock[*item]
		mu   sync.Mutex
		rung = map[int]time.Duration{}
	)
	c.Init(func(xs []*item) {
		mu.Lock()
		defer mu.Unlock()
		for _, x := range xs {
			_, twice := rung[x.n]
			require.False(t, twice, "item %d rung twice", x.n)
			rung[x.n] = Now()
		}
	})
	now := Now()
	items := make([]*item, 50)
	for i := range items {
		items[i] = &item{n: i}
		c.Set(items[i], now+time.Duration(50-i)*time.Millisecond) // latest first: each Set moves the timer
	}
	require.True(t, c.Remove(items[10]))
	require.False(t, c.Remove(items[10]), "removed once")
	c.Set(items[20], now+time.Hour)
	require.True(t, c.Remove(items[20]))
	require.Eventually(t, func() bool { return c.Len() == 0 }, 2*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, rung, 48)
	for i, x := range items {
		at, ok := rung[i]
		if i == 10 || i == 20 {
			require.False(t, ok, "item %d was removed", i)
			continue
		}
		require.GreaterOrEqual(t, at, now+time.Duration(50-i)*time.Millisecond, "item %d rang early", x.n)
	}
	c.mu.Lock()
	require.Zero(t, c.armed, "the timer stops when the Clock is empty")
	c.mu.Unlock()
}
