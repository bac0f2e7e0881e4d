package watchdog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/slot"
)

// round is the working memory of one renewal round. The watchdog goroutine
// owns it and reuses it from round to round, so that a round allocates per
// batch, not per hold.
type round struct {
	holds []*Entry          // the round's holds, in batch order
	keys  []string          // every batch's KEYS, back to back
	args  []string          // every batch's ARGV, back to back
	execs []rueidis.LuaExec // one per batch, slicing keys and args
}

// renew renews every hold due by now in one round: one pipelined call
// carrying all its batches, bounded by half a period. Then it applies the
// replies and runs the callbacks they call for.
func (w *Watchdog) renew(ctx context.Context, now time.Time) {
	r := &w.round
	w.mu.Lock()
	r.holds = w.wheel.drain(w.wheel.tickOf(now), r.holds[:0])
	if len(r.holds) == 0 {
		w.mu.Unlock()
		return
	}
	for _, h := range r.holds {
		h.phase = sending
	}
	w.sending = make(chan struct{})
	w.mu.Unlock()

	r.batch(w.cluster, w.lease)
	sent := time.Now()
	replies := w.send(ctx, r.execs)

	stats := w.tally(ctx, r, replies, sent)
	if w.onRound != nil && ctx.Err() == nil { // a round Close cut short failed for no fault of Redis
		stats.Calls, stats.Duration = len(r.execs), time.Since(sent)
		w.onRound(stats)
	}
	w.notify(ctx, r, sent)
	r.reset()
}

// batch cuts the round's holds into renew calls of at most MaxBatch keys,
// each within one Cluster slot on a Cluster, and fills in r.execs.
func (r *round) batch(cluster bool, lease string) {
	if cluster {
		for _, h := range r.holds {
			if !h.slotted {
				h.slot, h.slotted = slot.Of(h.Key), true
			}
		}
		slices.SortFunc(r.holds, func(a, b *Entry) int { return cmp.Compare(a.slot, b.slot) })
	}
	// At most one lease argument per hold: keys and args never grow in the
	// loop, so every batch slices one backing array.
	r.keys = slices.Grow(r.keys, len(r.holds))
	r.args = slices.Grow(r.args, 2*len(r.holds))
	for i := 0; i < len(r.holds); {
		j := i + 1
		for j < len(r.holds) && j-i < MaxBatch && r.holds[j].slot == r.holds[i].slot {
			j++
		}
		k, a := len(r.keys), len(r.args)
		r.args = append(r.args, lease)
		for _, h := range r.holds[i:j] {
			r.keys = append(r.keys, h.Key)
			r.args = append(r.args, h.Field)
		}
		r.execs = append(r.execs, rueidis.LuaExec{
			Keys: r.keys[k:len(r.keys):len(r.keys)],
			Args: r.args[a:len(r.args):len(r.args)],
		})
		i = j
	}
}

// tally applies the replies of a round sent at sent. A confirmed hold is
// due again a period after sent; a lost one leaves the watchdog; the holds
// of a failed batch are retried on the next tick. Holds removed while the
// round was out are left alone. Then it releases the Removes waiting for
// the round. Failures are logged unless Close cut the round short. It
// returns the holds renewed, lost and failed.
func (w *Watchdog) tally(ctx context.Context, r *round, replies []batchReply, sent time.Time) RoundStats {
	var stats RoundStats
	var failed, failedHolds int
	var firstErr error

	w.mu.Lock()
	next := w.wheel.tickOf(sent) + w.wheel.period
	retry := w.wheel.cursor + 1
	holds := r.holds
	for b, exec := range r.execs {
		batch := holds[:len(exec.Keys)]
		holds = holds[len(exec.Keys):]
		renewed, err := replies[b].renewed, replies[b].err
		if err == nil && len(renewed) != len(batch) {
			err = fmt.Errorf("watchdog: renew replied %d results for %d keys", len(renewed), len(batch))
		}
		if err != nil {
			failed++
			failedHolds += len(batch)
			if firstErr == nil {
				firstErr = err
			}
		}
		for i, h := range batch {
			if h.phase != sending {
				continue
			}
			switch {
			case err != nil:
				h.phase = waiting
				w.wheel.schedule(h, retry)
				stats.Failed++
			case renewed[i] == 1:
				h.phase = waiting
				h.pending = callRenewed
				w.wheel.schedule(h, next)
				stats.Renewed++
			default:
				h.phase = gone
				h.pending = callLost
				w.count--
				stats.Lost++
			}
		}
	}
	close(w.sending)
	w.sending = nil
	w.mu.Unlock()

	if failed > 0 && ctx.Err() == nil {
		w.log.Warn("watchdog: renewal failed; retrying on the next tick",
			"batches", failed, "holds", failedHolds, "err", firstErr)
	}
	return stats
}

// notify runs the callbacks that tally called for, outside the lock.
// Remove clears a pending callback, so none starts after Remove returns.
// It stops at Close, which drops holds without callbacks.
func (w *Watchdog) notify(ctx context.Context, r *round, sent time.Time) {
	for _, h := range r.holds {
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		call := h.pending
		h.pending = noCall
		w.mu.Unlock()
		switch {
		case h.Holder == nil:
		case call == callRenewed:
			h.Holder.Renewed(sent)
		case call == callLost:
			h.Holder.Lost(h)
		}
	}
}

// reset empties r for the next round, keeping its capacity but no
// references to this round's holds and strings.
func (r *round) reset() {
	clear(r.holds)
	clear(r.keys)
	clear(r.args)
	clear(r.execs)
	r.holds, r.keys, r.args, r.execs = r.holds[:0], r.keys[:0], r.args[:0], r.execs[:0]
}
