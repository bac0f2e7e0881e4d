package rlock_test

import (
	"context"
	"errors"
	"fmt"
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

// exclusion counts the owners in a read-write lock's critical section and
// records every moment a writer shared it with anyone.
type exclusion struct {
	readers, writers atomic.Int32 // in the section now
	reads, writes    atomic.Int32 // entries so far
	broken           atomic.Int32
}

func (e *exclusion) read(hold func()) {
	e.reads.Add(1)
	e.readers.Add(1)
	if e.writers.Load() != 0 {
		e.broken.Add(1)
	}
	hold()
	e.readers.Add(-1)
}

func (e *exclusion) write(hold func()) {
	e.writes.Add(1)
	if e.writers.Add(1) != 1 || e.readers.Load() != 0 {
		e.broken.Add(1)
	}
	hold()
	e.writers.Add(-1)
}

// TestRWHostileSharedOwnerAndCancels: goroutines that share one reader's
// context re-enter its read hold while writers of another Client wait
// behind it and readers of a third are held back by those writers; then
// everyone churns with contexts cancelled mid-request. No writer ever
// shares the lock, the shared owner never deadlocks on the writers it
// holds back, and when everything has stopped nothing is left in Redis: no
// hold, no waiting mark, no subscriber, and no request given up on takes
// effect later.
func TestRWHostileSharedOwnerAndCancels(t *testing.T) {
	name := redistest.LockName(t)
	setup := redistest.Setup{Node: redistest.Shared(t)}
	clients := []drainable{newDrainable(t, setup), newDrainable(t, setup), newDrainable(t, setup)}
	shared := clients[0].RWMutex(name)
	writers := clients[1].RWMutex(name)
	readers := clients[2].RWMutex(name)
	var ex exclusion
	var failures sync.Map
	fail := func(what string, err error) {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			failures.Store(what+": "+err.Error(), true)
		}
	}

	base, err := shared.RLock(t.Context())
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Churners: a cancel at a random moment, often mid-request.
	churn := func(rw *rlock.RWMutex, write bool) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(40))*time.Millisecond)
			if write {
				wctx, err := rw.Lock(ctx)
				if err == nil {
					ex.write(func() { time.Sleep(time.Millisecond) }) // a hold a reader could break into
					fail("Unlock", rw.Unlock(wctx))
				}
				fail("Lock", err)
			} else {
				rctx, err := rw.RLock(ctx)
				if err == nil {
					ex.read(func() { time.Sleep(time.Millisecond) }) // a hold a writer could break into
					fail("RUnlock", rw.RUnlock(rctx))
				}
				fail("RLock", err)
			}
			cancel()
		}
	}
	for i := range 4 {
		wg.Go(func() { churn(writers, true) })
		wg.Go(func() { churn(readers, i%2 == 0) })
	}
	// The shared owner re-enters from 8 goroutines while the others wait:
	// it must never wait behind the writers it holds back.
	var reentries atomic.Int32
	var inner sync.WaitGroup
	for range 8 {
		inner.Go(func() {
			for range 20 {
				ctx, cancel := context.WithTimeout(base, 5*time.Second)
				rctx, err := shared.RLock(ctx)
				if err == nil {
					reentries.Add(1)
					ex.read(func() {})
					fail("shared RUnlock", shared.RUnlock(rctx))
				}
				fail("shared RLock", err)
				cancel()
			}
		})
	}
	waitGroup(t, &inner, 30*time.Second, "the shared owner's re-entries")
	assert.EqualValues(t, 160, reentries.Load(), "every re-entry of the shared reader went through")
	require.NoError(t, shared.RUnlock(base))

	// The churn goes on until writers got in a few more times.
	writes := ex.writes.Load()
	redistest.Eventually(t, "writers get in once the shared reader left", func(context.Context) error {
		if n := ex.writes.Load() - writes; n < 5 {
			return fmt.Errorf("%d writes since", n)
		}
		return nil
	})
	close(stop)
	waitGroup(t, &wg, 30*time.Second, "the churners stop")
	failures.Range(func(k, _ any) bool {
		t.Errorf("unexpected error: %v", k)
		return true
	})
	assert.Zero(t, ex.broken.Load(), "a writer shared the lock")
	assert.Positive(t, ex.writes.Load(), "writers got in")
	assert.Greater(t, ex.reads.Load(), reentries.Load(), "other readers got in")
	t.Logf("%d reads, %d writes", ex.reads.Load(), ex.writes.Load())

	raw := redistest.Shared(t).Client(t)
	redistest.AssertNoSubscribers(t, raw, rwKeys(name)) // while the Clients live
	drain(t, clients...)                                // every request given up on has landed
	assert.Equal(t, []string{rwKeys(name).Token}, redistest.LastingKeys(t, raw, rwKeys(name)),
		"no hold or mark left: %v", rwFields(t, raw, name))
}

// TestRWHostileCloseWhileEverythingRuns: readers and writers of a Client
// loop on a few locks, with re-entries and downgrades, when it is closed.
// Every call ends with its own result or ErrClosed, every lock context of
// the Client is done, and a rival writer takes each lock once the closed
// Client's leases ran out.
func TestRWHostileCloseWhileEverythingRuns(t *testing.T) {
	const lease = time.Second
	c, err := rlock.New(redistest.Shared(t).Client(t), rlock.WithLeaseTime(lease))
	require.NoError(t, err)
	rival := sharedClient(t, rlock.WithLeaseTime(lease))
	name := redistest.LockName(t)
	names := []string{name + ":0", name + ":1"}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		bad      []error
		contexts []context.Context
	)
	// record keeps a lock context, and reports whether err ends the loop.
	record := func(lctx context.Context, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if lctx != nil {
			contexts = append(contexts, lctx)
		}
		if err != nil && !errors.Is(err, rlock.ErrClosed) && !errors.Is(err, rlock.ErrNotHeld) {
			bad = append(bad, err)
		}
		return errors.Is(err, rlock.ErrClosed)
	}
	for i := range 16 {
		wg.Go(func() {
			rw := c.RWMutex(names[i%len(names)])
			for {
				wait := time.Duration(rand.IntN(30)) * time.Millisecond
				if i%4 == 0 { // a writer that downgrades
					wctx, ok, err := rw.TryLock(t.Context(), wait, 0)
					if record(nil, err) {
						return
					}
					if !ok {
						continue
					}
					rctx, err := rw.RLock(wctx)
					if record(rctx, err) || record(wctx, rw.Unlock(wctx)) || record(nil, rw.RUnlock(rctx)) {
						return
					}
					continue
				}
				rctx, ok, err := rw.TryRLock(t.Context(), wait, 0)
				if record(nil, err) {
					return
				}
				if !ok {
					continue
				}
				inner, err := rw.RLock(rctx)
				if record(rctx, err) || record(nil, rw.RUnlock(inner)) || record(nil, rw.RUnlock(rctx)) {
					return
				}
			}
		})
	}
	closeWhileRunning(t, c, &wg, &mu, &bad, &contexts)
	for _, n := range names {
		rw := rival.RWMutex(n)
		wctx, ok, err := rw.TryLock(t.Context(), 2*lease+time.Second, 0)
		require.NoError(t, err)
		require.True(t, ok, "the rival writes %s once the closed Client's leases ran out", n)
		require.NoError(t, rw.Unlock(wctx))
	}
}
