package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
	"github.com/rlock/rlock/rlock"
)

// TestSlotMigrationUnderLoad moves the slot of a group of contended locks
// between masters while workers in several Clients take and release them:
// never two holders of one lock, and no error reaches a caller (MOVED, ASK
// and TRYAGAIN are absorbed by rueidis and rlock's resends).
func TestSlotMigrationUnderLoad(t *testing.T) {
	if redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a Cluster it starts")
	}
	const locks, clients, workers, moves = 4, 3, 3, 6
	cl := redistest.NewCluster(t, redistest.ClusterConfig{})
	group := redistest.LockName(t)
	names := make([]string, locks)
	for i := range names {
		names[i] = fmt.Sprint(i) // locks of one group: one slot
	}
	s := slot.Of(keys.NewGrouped(rlock.DefaultKeyPrefix, group, names[0]).Hash)

	ctx, stop := context.WithCancel(t.Context())
	inside := make([]atomic.Int32, locks)
	var overlaps, sections atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		c := newRlock(t, cl.Client(t))
		for w := range workers {
			wg.Go(func() {
				for i := w; ctx.Err() == nil; i++ {
					lock := i % locks
					mu := c.GroupedMutex(group, names[lock])
					lctx, ok, err := mu.TryLock(ctx, time.Second, 0)
					if ctx.Err() != nil {
						return
					}
					if !assert.NoError(t, err, "lock %s during migration", names[lock]) || !ok {
						continue
					}
					if inside[lock].Add(1) > 1 {
						overlaps.Add(1)
					}
					sections.Add(1)
					time.Sleep(time.Millisecond) // a hold, for the others to meet
					inside[lock].Add(-1)
					assert.NoError(t, mu.Unlock(lctx), "unlock %s during migration", names[lock])
				}
			})
		}
	}

	// Between the moves, and after the last, the workers get the locks a
	// few times: every move meets them at work.
	working := func() {
		t.Helper()
		since := sections.Load()
		redistest.Eventually(t, "the workers get the locks", func(context.Context) error {
			if n := sections.Load() - since; n < 5 {
				return fmt.Errorf("%d critical sections since", n)
			}
			return nil
		})
	}
	for range moves {
		working()
		from, err := cl.MasterOf(t.Context(), s)
		require.NoError(t, err)
		require.NoError(t, cl.MigrateSlot(t.Context(), s, (from+1)%3), "move slot %d from master %d", s, from)
	}
	working()
	stop()
	wg.Wait()
	t.Logf("%d critical sections on %d locks while slot %d moved %d times", sections.Load(), locks, s, moves)
	assert.Zero(t, overlaps.Load(), "two holders of one lock at once")
	assert.Greater(t, sections.Load(), int32(moves), "the workers kept getting the locks")
}
