package rlock_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestMultiLockConcurrentUnlocksLeaveOneLevelEach: goroutines sharing a
// MultiLock hold taken three levels deep call Unlock more times than it
// is deep, all at once. Exactly three succeed, the rest get ErrNotHeld,
// and every node ends free, for a MultiLock and a RedLock alike, as for
// a Mutex. (Each Unlock left a level on every node, and the calls met on
// the nodes in different orders: an Unlock that found a node at 0 counted
// fewer parts than the quorum and reported ErrNotHeld, so fewer than
// three succeeded, and the hold ended as lost.)
func TestMultiLockConcurrentUnlocksLeaveOneLevelEach(t *testing.T) {
	const levels = 3
	ms := startMasters(t, 3)
	for _, tc := range []struct {
		name string
		new  func(...*rlock.Mutex) *rlock.MultiLock
	}{{"MultiLock", rlock.NewMultiLock}, {"RedLock", rlock.NewRedLock}} {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.LockName(t)
			ml := tc.new(ms.mutexes(t, name)...)
			for round, extra := range []int{1, 1, 1, 2, 2, 4, 0} {
				lctx, err := ml.Lock(t.Context())
				require.NoError(t, err)
				for range levels - 1 {
					lctx, err = ml.Lock(lctx)
					require.NoError(t, err)
				}
				errs := make([]error, levels+extra)
				var wg sync.WaitGroup
				for i := range errs {
					wg.Go(func() { errs[i] = ml.Unlock(lctx) })
				}
				wg.Wait()
				succeeded, notHeld := 0, 0
				for _, err := range errs {
					switch {
					case err == nil:
						succeeded++
					case errors.Is(err, rlock.ErrNotHeld):
						notHeld++
					default:
						t.Errorf("round %d: Unlock: %v", round, err)
					}
				}
				assert.Equal(t, levels, succeeded, "round %d: Unlocks that left a level", round)
				assert.Equal(t, extra, notHeld, "round %d: Unlocks past the hold's depth", round)
				require.Zero(t, ms.held(t, name), "round %d: a node kept a level", round)
			}
		})
	}
}
