package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// goroutinesLeft returns rlockGoroutines(except...) once it is empty, or
// after exitGrace: a goroutine that has signalled its end (a channel's
// done, which Close waits for) may still be returning when Close does.
func goroutinesLeft(except ...string) []string {
	const exitGrace = 200 * time.Millisecond
	deadline := time.Now().Add(exitGrace)
	for {
		left := rlockGoroutines(except...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rlockGoroutineIDs returns the ids ("goroutine N") of the goroutines
// rlockGoroutines returns now: those a test began beside.
func rlockGoroutineIDs() []string {
	var ids []string
	for _, g := range rlockGoroutines() {
		id, _, _ := strings.Cut(g, " [")
		ids = append(ids, id)
	}
	return ids
}

// rlockGoroutines returns the stacks of goroutines running code of rlock's
// packages (rlock, pubsub, watchdog, alarm) that are not test goroutines.
func rlockGoroutines(except ...string) []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "_test.go") || strings.Contains(g, "testing.tRunner") {
			continue
		}
		id, _, _ := strings.Cut(g, " [")
		if slices.Contains(except, id) {
			continue
		}
		if strings.Contains(g, "github.com/rlock/rlock/rlock.") ||
			strings.Contains(g, "github.com/rlock/rlock/pubsub.") ||
			strings.Contains(g, "github.com/rlock/rlock/watchdog.") ||
			strings.Contains(g, "github.com/rlock/rlock/internal/alarm.") {
			out = append(out, g)
		}
	}
	return out
}

// TestCloseStormEveryKind: Close while goroutines of the Client
// take, re-enter, release and wait on a Semaphore, a FairMutex, an RWMutex
// and a CountDownLatch. Every call returns, with its own result or
// ErrClosed; every lock context is done; once Close returned no goroutine
// of rlock runs; and within a lease (plus slack) after Close nothing the
// closed Client took is held in Redis.
func TestCloseStormEveryKind(t *testing.T) {
	const lease = time.Second
	rc := redistest.Shared(t).Client(t)
	require.NoError(t, rc.Do(t.Context(), rc.B().Ping().Build()).Error())
	inspector := sharedClient(t)
	before := rlockGoroutineIDs()
	c, err := rlock.New(rc, rlock.WithLeaseTime(lease))
	require.NoError(t, err)

	base := redistest.LockName(t)
	semName, fairName, rwName, latchName := base+":sem", base+":fair", base+":rw", base+":latch"
	ok, err := c.Semaphore(semName).TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = c.CountDownLatch(latchName).TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = inspector.CountDownLatch(latchName).CountDown(context.Background()) })

	allowed := func(err error) bool {
		return err == nil || errors.Is(err, rlock.ErrClosed) || errors.Is(err, rlock.ErrNotHeld)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		bad      []error
		contexts []context.Context
	)
	record := func(what string, err error) bool {
		if !allowed(err) {
			mu.Lock()
			bad = append(bad, fmt.Errorf("%s: %w", what, err))
			mu.Unlock()
		}
		return errors.Is(err, rlock.ErrClosed)
	}
	keep := func(lctx context.Context) {
		mu.Lock()
		contexts = append(contexts, lctx)
		mu.Unlock()
	}
	fixedOr0 := func(i int) time.Duration {
		if i%3 == 0 {
			return lease
		}
		return 0
	}
	for i := range 32 {
		wait := func() time.Duration { return time.Duration(rand.IntN(30)) * time.Millisecond }
		hold := func() { time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) }
		switch i % 4 {
		case 0:
			wg.Go(func() {
				s := c.Semaphore(semName)
				for {
					pctx, ok, err := s.TryAcquire(t.Context(), wait(), fixedOr0(i))
					if record("sem TryAcquire", err) {
						return
					}
					if !ok {
						continue
					}
					keep(pctx)
					hold()
					if record("sem Release", s.Release(pctx)) {
						return
					}
				}
			})
		case 1:
			wg.Go(func() {
				m := c.FairMutex(fairName)
				for {
					lctx, ok, err := m.TryLock(t.Context(), wait(), fixedOr0(i))
					if record("fair TryLock", err) {
						return
					}
					if !ok {
						continue
					}
					keep(lctx)
					inner, err := m.Lock(lctx)
					if record("fair re-Lock", err) {
						return
					}
					hold()
					if record("fair Unlock inner", m.Unlock(inner)) || record("fair Unlock", m.Unlock(lctx)) {
						return
					}
				}
			})
		case 2:
			wg.Go(func() {
				rw := c.RWMutex(rwName)
				for {
					var lctx context.Context
					var ok bool
					var err error
					read := rand.IntN(2) == 0
					if read {
						lctx, ok, err = rw.TryRLock(t.Context(), wait(), fixedOr0(i))
					} else {
						lctx, ok, err = rw.TryLock(t.Context(), wait(), fixedOr0(i))
					}
					if record("rw try", err) {
						return
					}
					if !ok {
						continue
					}
					keep(lctx)
					hold()
					if read {
						err = rw.RUnlock(lctx)
					} else {
						err = rw.Unlock(lctx)
					}
					if record("rw unlock", err) {
						return
					}
				}
			})
		case 3:
			wg.Go(func() {
				l := c.CountDownLatch(latchName)
				for {
					err := l.Await(t.Context())
					if err == nil {
						record("latch Await returned nil while the count is 1", errors.New("woken for nothing"))
						return
					}
					if record("latch Await", err) {
						return
					}
				}
			})
		}
	}

	redistest.Eventually(t, "the Client's goroutines take locks", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(contexts) < 30 {
			return fmt.Errorf("%d locks taken", len(contexts))
		}
		return nil
	})
	start := time.Now()
	require.NoError(t, c.Close())
	closed := time.Since(start)
	left := goroutinesLeft(before...)
	assert.Less(t, closed, 5*time.Second, "Close returns promptly")
	waitGroup(t, &wg, redistest.Patience, "every call returns after Close")

	mu.Lock()
	assert.Empty(t, bad, "calls ended only with their own result or ErrClosed")
	for _, lctx := range contexts {
		if !assert.Error(t, lctx.Err(), "every lock context of the closed Client is done") {
			break
		}
	}
	mu.Unlock()
	// The test goroutines are gone; the inspector Client runs its own
	// goroutines only once it has holds or waiters, which it has not.
	assert.Empty(t, left, "no goroutine of rlock runs once Close returned")

	// Nothing the closed Client took outlives its lease.
	time.Sleep(lease + 300*time.Millisecond)
	st, err := inspector.Semaphore(semName).Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "semaphore holders a lease after Close")
	assert.Equal(t, 2, st.Available, "every permit back a lease after Close")
	st, err = inspector.FairMutex(fairName).Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "fair holders a lease after Close")
	assert.Empty(t, st.Waiters, "fair queue a lease after Close")
	st, err = inspector.RWMutex(rwName).Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "rw holders a lease after Close")
	assert.Empty(t, st.Waiters, "rw waiters a lease after Close")
}
