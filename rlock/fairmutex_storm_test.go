package rlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFairStormExclusive: three Clients, four
// goroutines each, Lock, TryLock with short waits, and Locks whose
// contexts end after a few ms, with re-entries, for a few seconds. At most
// one goroutine is ever inside the section, every Unlock of a live hold
// succeeds, and at the end nobody is queued and the lock is free.
func TestFairStormExclusive(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	admin := s.Client(t)
	clients := []drainable{newDrainable(t, s), newDrainable(t, s), newDrainable(t, s)}
	var inside, overlaps, took, unlockErrs atomic.Int64
	var mu sync.Mutex
	var bad []error
	stop := time.Now().Add(8 * time.Second)
	var wg sync.WaitGroup
	for i := range 12 {
		fm := clients[i%3].FairMutex(name)
		wg.Go(func() {
			for time.Now().Before(stop) {
				var lctx context.Context
				var ok bool
				var err error
				cancel := func() {}
				switch rand.IntN(3) {
				case 0:
					lctx, err = fm.Lock(t.Context())
					ok = err == nil
				case 1:
					lctx, ok, err = fm.TryLock(t.Context(), time.Duration(rand.IntN(30))*time.Millisecond, 0)
				case 2:
					var ctx context.Context
					ctx, cancel = context.WithTimeout(t.Context(), time.Duration(rand.IntN(20))*time.Millisecond)
					lctx, err = fm.Lock(ctx)
					ok = err == nil
					if err != nil && errors.Is(err, context.DeadlineExceeded) {
						err = nil
					}
				}
				if err != nil {
					mu.Lock()
					bad = append(bad, err)
					mu.Unlock()
				}
				if err != nil || !ok {
					cancel()
					continue
				}
				took.Add(1)
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				if rand.IntN(3) == 0 && lctx.Err() == nil {
					if inner, err := fm.Lock(lctx); err == nil {
						assert.NoError(t, fm.Unlock(inner))
					} else if lctx.Err() == nil {
						mu.Lock()
						bad = append(bad, err)
						mu.Unlock()
					}
				}
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				live := lctx.Err() == nil
				inside.Add(-1)
				if err := fm.Unlock(lctx); err != nil && live {
					unlockErrs.Add(1)
					mu.Lock()
					bad = append(bad, err)
					mu.Unlock()
				}
				cancel()
			}
		})
	}
	waitGroup(t, &wg, redistest.Patience, "every goroutine ends")
	t.Logf("%d holds", took.Load())
	assert.Zero(t, overlaps.Load(), "two holders at once")
	mu.Lock()
	assert.Empty(t, bad)
	mu.Unlock()
	drain(t, clients...)
	assert.Empty(t, queued(t, admin, name), "nobody is left queued")
	fresh := newRlock(t, s.Client(t)).FairMutex(name)
	lctx, ok, err := fresh.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "the lock is free")
	require.NoError(t, fresh.Unlock(lctx))
	_ = rlock.ErrNotHeld
}
