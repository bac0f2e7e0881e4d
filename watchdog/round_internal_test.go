package watchdog

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/slot"
)

func TestBatch(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(fmt.Sprintf("cluster=%v", cluster), func(t *testing.T) {
			// 250 keys in one slot, the rest spread at random, shuffled as
			// the wheel might hand them over.
			var r round
			perSlot := map[uint16]int{}
			for i := range 1000 {
				key := fmt.Sprintf("k:{%d}", rand.IntN(300))
				if i < 250 {
					key = fmt.Sprintf("k:{big}:%d", i)
				}
				h := &Entry{Key: key, Field: fmt.Sprintf("f%d", i)}
				if cluster {
					h.slot = slot.Of(key)
				}
				perSlot[h.slot]++
				r.holds = append(r.holds, h)
			}
			rand.Shuffle(len(r.holds), func(i, j int) { r.holds[i], r.holds[j] = r.holds[j], r.holds[i] })

			r.batch(cluster, "30000")
			want := 0
			for _, n := range perSlot {
				want += (n + MaxBatch - 1) / MaxBatch
			}
			assert.Equal(t, want, len(r.execs), "batches: the fewest that keep to a slot and MaxBatch")

			// tally reads the replies back in r.holds order.
			holds := r.holds
			for b, e := range r.execs {
				require.LessOrEqual(t, len(e.Keys), MaxBatch, "batch %d", b)
				require.Len(t, e.Args, len(e.Keys)+1, "batch %d", b)
				assert.Equal(t, "30000", e.Args[0], "batch %d lease", b)
				for i, key := range e.Keys {
					h := holds[i]
					assert.Equal(t, h.Key, key, "batch %d key %d", b, i)
					assert.Equal(t, h.Field, e.Args[i+1], "batch %d field %d", b, i)
					if cluster {
						assert.Equal(t, slot.Of(e.Keys[0]), slot.Of(key), "batch %d key %d: another slot", b, i)
					}
				}
				holds = holds[len(e.Keys):]
			}
			assert.Empty(t, holds, "holds left out of every batch")

			r.reset()
			assert.Empty(t, r.holds)
			assert.Empty(t, r.execs)
		})
	}
}
