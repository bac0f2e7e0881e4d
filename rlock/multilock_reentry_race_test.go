package rlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestMultiLockReentryRacingFinalUnlock: two goroutines re-enter a
// MultiLock through its context while a third makes the hold's final
// Unlock. Whichever wins, once each re-entry that succeeded is unlocked
// too, no node keeps a level. (A re-entry whose hold ended while it took
// its levels was bound as a new hold, whose watchers took a node back:
// one round in a few hundred under -race left a level until its lease.)
func TestMultiLockReentryRacingFinalUnlock(t *testing.T) {
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	ml := rlock.NewMultiLock(ms.mutexes(t, name)...)
	deadline := time.Now().Add(5 * time.Second)
	rounds := 0
	for ; rounds < 2000 && time.Now().Before(deadline); rounds++ {
		lctx, err := ml.Lock(t.Context())
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if inner, err := ml.Lock(lctx); err == nil {
					_ = ml.Unlock(inner)
				}
			})
		}
		wg.Go(func() { _ = ml.Unlock(lctx) })
		wg.Wait()
		require.Zero(t, ms.held(t, name), "round %d: a node kept a level after both Lock/Unlock pairs", rounds)
	}
	t.Logf("%d rounds", rounds)
}
