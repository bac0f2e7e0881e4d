package rlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestMixedStorm: two Clients, owners shared by goroutines and
// fresh ones, Lock, TryLock with short waits and Locks cancelled at
// random, on one Mutex. Never two owners inside at once; every Unlock of a
// live hold succeeds; a Lock that nobody cancels returns within a few
// seconds (holds are a millisecond); at the end nothing is held.
func TestMixedStorm(t *testing.T) {
	name := redistest.LockName(t)
	clients := []*rlock.Client{sharedClient(t), sharedClient(t)}
	var (
		mu      sync.Mutex
		inside  = map[any]int{}
		bad     []string
		maxWait time.Duration
	)
	enter := func(who any) {
		mu.Lock()
		defer mu.Unlock()
		for o, n := range inside {
			if o != who && n > 0 {
				bad = append(bad, fmt.Sprintf("two owners inside: %v and %v", o, who))
			}
		}
		inside[who]++
	}
	leave := func(who any) {
		mu.Lock()
		defer mu.Unlock()
		inside[who]--
	}
	stop, cancel := context.WithTimeout(t.Context(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var owners []context.Context
	run := func(m *rlock.Mutex, owner context.Context, who any) {
		for stop.Err() == nil {
			base := owner
			id := who
			if base == nil {
				base = context.Background()
				id = new(int)
			}
			var lctx context.Context
			release := func() {}
			var ok bool
			var err error
			switch rand.IntN(3) {
			case 0:
				ctx, c := context.WithTimeout(base, 15*time.Second)
				start := time.Now()
				lctx, err = m.Lock(ctx)
				release = c
				ok = err == nil
				if !assert.NoError(t, err, "a Lock nobody cancels") {
					return
				}
				mu.Lock()
				maxWait = max(maxWait, time.Since(start))
				mu.Unlock()
			case 1:
				lctx, ok, err = m.TryLock(base, time.Duration(rand.IntN(15))*time.Millisecond, 0)
				if !assert.NoError(t, err) {
					return
				}
			case 2:
				ctx, c := context.WithCancel(base)
				time.AfterFunc(time.Duration(rand.IntN(5000))*time.Microsecond, c)
				lctx, err = m.Lock(ctx)
				ok = err == nil
				if err != nil && ctx.Err() == nil {
					assert.NoError(t, err, "only its cancellation fails a Lock")
				}
				if ok {
					// The ctx may end now: the hold lives on, with its
					// lock context ended too; Unlock still works.
					lctx = context.WithoutCancel(lctx)
				}
			}
			if !ok {
				release()
				continue
			}
			enter(id)
			if owner == nil {
				if n, err := m.HoldCount(lctx); err != nil || n != 1 {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("a fresh owner's hold count: %d, %v", n, err))
					mu.Unlock()
				}
			}
			if lctx.Err() != nil {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("a lock context done while held: %v", context.Cause(lctx)))
				mu.Unlock()
			}
			time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			leave(id)
			if err := m.Unlock(lctx); err != nil {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("Unlock: %v", err))
				mu.Unlock()
			}
			release()
		}
	}
	for ci, c := range clients {
		m := c.Mutex(name)
		for range 3 {
			owner := sharedOwner(t, c, fmt.Sprintf("%s:%d:%d", name, ci, len(owners)))
			owners = append(owners, owner)
			for range 3 {
				wg.Go(func() { run(m, owner, owner) })
			}
		}
		for range 4 {
			wg.Go(func() { run(m, nil, nil) })
		}
	}
	waitGroup(t, &wg, 40*time.Second, "every goroutine stops")
	mu.Lock()
	assert.Empty(t, bad)
	t.Logf("longest uncancelled Lock: %v", maxWait)
	assert.Less(t, maxWait, 5*time.Second, "a waiter slept while the lock was free")
	mu.Unlock()
	m := clients[0].Mutex(name)
	for i, o := range owners {
		mm := clients[i/3].Mutex(name)
		n, err := mm.HoldCount(o)
		require.NoError(t, err)
		assert.Zero(t, n, "owner %d holds nothing", i)
	}
	locked, err := m.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "nothing holds the lock at the end")
}
