package watchdog

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWheelTicks(t *testing.T) {
	for _, tc := range []struct {
		period     time.Duration
		tick       time.Duration
		periodTick int64
	}{
		{period: 10 * time.Second, tick: 1250 * time.Millisecond, periodTick: 8},
		{period: 100 * time.Millisecond, tick: 12500 * time.Microsecond, periodTick: 8},
		{period: 50 * time.Millisecond, tick: minTick, periodTick: 5},             // floor
		{period: 15 * time.Millisecond, tick: minTick, periodTick: 1},             // floor, rounded down
		{period: 3 * time.Millisecond, tick: 3 * time.Millisecond, periodTick: 1}, // never over a period
	} {
		wh := newWheel(tc.period)
		assert.Equal(t, tc.tick, wh.tick, "tick of period %v", tc.period)
		assert.Equal(t, tc.periodTick, wh.period, "ticks per period %v", tc.period)
		assert.Len(t, wh.buckets, int(tc.periodTick)+1)
	}
}

// A renewal sent at any moment is next due at a tick that begins no later
// than a period after it, and less than two ticks earlier.
func TestWheelNeverLate(t *testing.T) {
	for _, period := range []time.Duration{10 * time.Second, 100 * time.Millisecond, 15 * time.Millisecond} {
		wh := newWheel(period)
		for range 1000 {
			sent := wh.start.Add(time.Duration(rand.Int64N(int64(time.Hour))))
			due := wh.at(wh.tickOf(sent) + wh.period)
			assert.False(t, due.After(sent.Add(period)), "period %v, sent %v: due %v is late", period, sent, due)
			assert.Greater(t, due.Sub(sent), period-2*wh.tick, "period %v: due too early", period)
		}
	}
}

func TestWheelDrain(t *testing.T) {
	wh := newWheel(80 * time.Millisecond) // ticks of 10ms, 8 a period, 9 buckets
	require.Len(t, wh.buckets, 9)
	holds := make([]*Entry, 6)
	for i := range holds {
		holds[i] = &Entry{Key: string(rune('a' + i))}
	}
	wh.schedule(holds[0], 3)
	wh.schedule(holds[1], 3)
	wh.schedule(holds[2], 3)
	wh.schedule(holds[3], 5)
	wh.schedule(holds[4], 3+9) // a lap ahead: same bucket as tick 3
	wh.schedule(holds[5], -4)  // already past: the next tick
	assert.Equal(t, int64(1), holds[5].due)

	wh.unlink(holds[1]) // from the middle of a bucket
	assert.ElementsMatch(t, []*Entry{holds[5]}, wh.drain(2, nil), "due by tick 2")
	assert.ElementsMatch(t, []*Entry{holds[0], holds[2]}, wh.drain(4, nil), "due by tick 4")
	assert.Empty(t, wh.drain(4, nil), "drained again")
	wh.schedule(holds[1], 2) // behind the cursor: tick 5
	assert.Equal(t, int64(5), holds[1].due)
	// Far behind: every bucket is visited once, and only what is due goes.
	assert.ElementsMatch(t, []*Entry{holds[3], holds[1]}, wh.drain(11, nil), "due by tick 11")
	assert.ElementsMatch(t, []*Entry{holds[4]}, wh.drain(1000, nil), "due by tick 1000")
	for i, head := range wh.buckets {
		assert.Nil(t, head, "bucket %d not empty", i)
	}
}
