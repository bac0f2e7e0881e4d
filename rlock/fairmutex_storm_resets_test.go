package rlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFairStormResets: as TestFairStormExclusive,
// with one of the three Clients behind a proxy that drops its connections
// every 150-400 ms (replies lost, subscriptions made again). Nobody is
// ever inside the section beside another holder whose context is live.
func TestFairStormResets(t *testing.T) {
	node := redistest.Shared(t)
	s := redistest.Setup{Node: node}
	name := redistest.LockName(t)
	admin := s.Client(t)
	proxy := node.Proxy(t)
	prc, err := rueidis.NewClient(redistest.ClientOption(proxy.Addr()))
	require.NoError(t, err)
	t.Cleanup(prc.Close)
	const lease = 2 * time.Second
	clients := []*rlock.Client{
		newRlock(t, s.Client(t), rlock.WithLeaseTime(lease)),
		newRlock(t, s.Client(t), rlock.WithLeaseTime(lease)),
		newRlock(t, prc, rlock.WithLeaseTime(lease), rlock.WithRetryTimeout(300*time.Millisecond)),
	}
	var mu sync.Mutex
	var holders []context.Context // the live holders' lock contexts, inside the section
	var overlaps, took atomic.Int64
	stop := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	wg.Go(func() {
		for time.Now().Before(stop) {
			time.Sleep(time.Duration(150+rand.IntN(250)) * time.Millisecond)
			proxy.Reset()
		}
	})
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
					var ctx context.Context
					ctx, cancel = context.WithTimeout(t.Context(), 3*time.Second)
					lctx, err = fm.Lock(ctx)
					ok = err == nil
				case 1:
					lctx, ok, err = fm.TryLock(t.Context(), time.Duration(rand.IntN(30))*time.Millisecond, 0)
				case 2:
					var ctx context.Context
					ctx, cancel = context.WithTimeout(t.Context(), time.Duration(rand.IntN(20))*time.Millisecond)
					lctx, err = fm.Lock(ctx)
					ok = err == nil
				}
				if err != nil || !ok {
					cancel()
					continue
				}
				took.Add(1)
				mu.Lock()
				for _, h := range holders {
					if h.Err() == nil && lctx.Err() == nil {
						overlaps.Add(1)
						t.Logf("overlap: a holder enters while another's context is live (Client %d)", i%3)
					}
				}
				holders = append(holders, lctx)
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				mu.Lock()
				for k, h := range holders {
					if h == lctx {
						holders = append(holders[:k], holders[k+1:]...)
						break
					}
				}
				mu.Unlock()
				_ = fm.Unlock(lctx)
				cancel()
			}
		})
	}
	waitGroup(t, &wg, redistest.Patience, "every goroutine ends")
	t.Logf("%d holds", took.Load())
	assert.Zero(t, overlaps.Load(), "a holder entered beside another whose lock context was live")
	// Entries left by lost withdraws end within their lease.
	waitQueued(t, admin, name, 0)
	fresh := newRlock(t, s.Client(t)).FairMutex(name)
	lctx, ok, err := fresh.TryLock(t.Context(), 3*lease, 0)
	require.NoError(t, err)
	require.True(t, ok, "the lock is free")
	require.NoError(t, fresh.Unlock(lctx))
}
