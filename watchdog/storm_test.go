package watchdog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/watchdog"
)

// TestAddRemoveStormThenClose: goroutines add and remove holds on a
// 60 ms lease (rounds every 20 ms) while some keys are deleted behind the
// watchdog's back, then Close runs in the middle of it. Checked: no
// callback of a hold starts after its Remove returned (but one that had
// started), Lost comes at most once and only for a deleted key, a deleted
// hold still registered is reported Lost within a few periods, and after
// Close: Len is 0, Add fails, Remove returns at once, no callback runs.
func TestAddRemoveStormThenClose(t *testing.T) {
	const lease = 60 * time.Millisecond
	rc := redistest.Shared(t).Client(t)
	w, err := watchdog.New(rc, watchdog.Config{Lease: lease})
	require.NoError(t, err)

	var closed atomic.Bool
	var bad atomic.Int64
	var mu sync.Mutex
	var problems []string
	report := func(f string, a ...any) {
		bad.Add(1)
		mu.Lock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(f, a...))
		}
		mu.Unlock()
	}
	type tracked struct {
		e       *watchdog.Entry
		removed atomic.Bool // Remove returned
		deleted atomic.Bool // its key was deleted
		lost    atomic.Int64
	}
	holder := func(tr *tracked) watchdog.Holder {
		return funcs{
			renewed: func(time.Time) {
				if tr.removed.Load() {
					report("Renewed after Remove returned: %s", tr.e.Key)
				}
				if closed.Load() {
					report("Renewed after Close returned")
				}
			},
			lost: func(*watchdog.Entry) {
				if tr.lost.Add(1) > 1 {
					report("Lost twice: %s", tr.e.Key)
				}
				if !tr.deleted.Load() {
					report("Lost for a key still held: %s", tr.e.Key)
				}
				if tr.removed.Load() {
					report("Lost after Remove returned: %s", tr.e.Key)
				}
				if closed.Load() {
					report("Lost after Close returned")
				}
			},
		}
	}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var seq atomic.Int64
	var pendingLoss sync.Map // *tracked deleted and not removed
	for g := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for ctx.Err() == nil {
				n := seq.Add(1)
				tr := &tracked{}
				tr.e = &watchdog.Entry{Key: fmt.Sprintf("watchdog:{%s:%d}", t.Name(), n), Field: "f"}
				tr.e.Holder = holder(tr)
				lock(t, rc, 10*lease, tr.e)
				if err := w.Add(tr.e); err != nil {
					require.ErrorIs(t, err, watchdog.ErrClosed)
					return
				}
				time.Sleep(time.Duration(r.IntN(int(2 * lease))))
				switch r.IntN(3) {
				case 0: // deleted behind its back, left for the watchdog to find
					tr.deleted.Store(true)
					require.NoError(t, rc.Do(context.Background(), rc.B().Del().Key(tr.e.Key).Build()).Error())
					pendingLoss.Store(tr, time.Now())
				case 1: // removed while a round may be out
					w.Remove(tr.e)
					tr.removed.Store(true)
					_ = rc.Do(context.Background(), rc.B().Del().Key(tr.e.Key).Build()).Error()
				default: // deleted, then removed
					tr.deleted.Store(true)
					_ = rc.Do(context.Background(), rc.B().Del().Key(tr.e.Key).Build()).Error()
					time.Sleep(time.Duration(r.IntN(int(lease))))
					w.Remove(tr.e)
					tr.removed.Store(true)
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	// Every hold deleted over 5 periods ago was reported lost.
	pendingLoss.Range(func(k, v any) bool {
		tr := k.(*tracked)
		if time.Since(v.(time.Time)) > 5*lease/3+50*time.Millisecond && tr.lost.Load() == 0 {
			report("deleted %v ago, never reported Lost: %s", time.Since(v.(time.Time)), tr.e.Key)
		}
		return true
	})
	start := time.Now()
	require.NoError(t, w.Close())
	closed.Store(true)
	assert.Less(t, time.Since(start), time.Second, "Close returns promptly")
	stop()
	wg.Wait()
	assert.Zero(t, w.Len(), "no hold registered after Close")
	require.ErrorIs(t, w.Add(&watchdog.Entry{Key: "k", Field: "f"}), watchdog.ErrClosed)
	time.Sleep(3 * lease / 3)
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, bad.Load(), "problems: %v", problems)
}
