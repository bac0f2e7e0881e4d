package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestClosedClientsWaiterCostsNothing: a Client closed while its
// waiter waits (queued, or marked as a waiting writer) leaves nothing that
// holds another Client's waiter back: once the holder lets go, the other
// Client's waiter gets the lock within a second, not after the closed
// Client's lease (10 s here).
func TestClosedClientsWaiterCostsNothing(t *testing.T) {
	const lease = 10 * time.Second
	t.Run("FairMutex", func(t *testing.T) {
		name, a, b, cc := threeClients(t, lease)
		hctx, err := a.FairMutex(name).Lock(t.Context())
		require.NoError(t, err)
		bDone := make(chan lockResult, 3)
		for range 3 {
			goLock(bDone, func() (context.Context, error) { return b.FairMutex(name).Lock(t.Context()) })
		}
		redistest.Eventually(t, "b's waiters queue", func(ctx context.Context) error {
			st, err := a.FairMutex(name).Inspect(ctx)
			if err != nil {
				return err
			}
			return redistest.Exactly("queued", len(st.Waiters), 3)
		})
		cDone := make(chan lockResult, 1)
		goLock(cDone, func() (context.Context, error) { return cc.FairMutex(name).Lock(t.Context()) })
		redistest.Eventually(t, "c's waiter queues", func(ctx context.Context) error {
			st, err := a.FairMutex(name).Inspect(ctx)
			if err != nil {
				return err
			}
			return redistest.Exactly("queued", len(st.Waiters), 4)
		})
		require.NoError(t, b.Close())
		for range 3 {
			r := receive(t, bDone, "b's waiter returns")
			require.ErrorIs(t, r.err, rlock.ErrClosed)
		}
		start := time.Now()
		require.NoError(t, a.FairMutex(name).Unlock(hctx))
		r := receive(t, cDone, "c's waiter")
		require.NoError(t, r.err)
		assert.Less(t, time.Since(start), time.Second, "c's waiter got the lock only after the closed Client's queue entries")
		require.NoError(t, cc.FairMutex(name).Unlock(r.ctx))
	})
	t.Run("RWMutexWriterMark", func(t *testing.T) {
		name, a, b, cc := threeClients(t, lease)
		rctx, err := a.RWMutex(name).RLock(t.Context())
		require.NoError(t, err)
		bDone := make(chan lockResult, 1)
		goLock(bDone, func() (context.Context, error) { return b.RWMutex(name).Lock(t.Context()) })
		redistest.Eventually(t, "b's writer waits", func(ctx context.Context) error {
			st, err := a.RWMutex(name).Inspect(ctx)
			if err != nil {
				return err
			}
			return redistest.Exactly("waiting", len(st.Waiters), 1)
		})
		require.NoError(t, b.Close())
		r := receive(t, bDone, "b's writer returns")
		require.ErrorIs(t, r.err, rlock.ErrClosed)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		cctx, err := cc.RWMutex(name).RLock(ctx)
		require.NoError(t, err, "a reader is held back by the closed Client's writer for %v", time.Since(start))
		assert.Less(t, time.Since(start), time.Second)
		require.NoError(t, cc.RWMutex(name).RUnlock(cctx))
		require.NoError(t, a.RWMutex(name).RUnlock(rctx))
	})
	t.Run("Semaphore", func(t *testing.T) {
		name, a, b, cc := threeClients(t, lease)
		_, err := a.Semaphore(name).TrySetPermits(t.Context(), 1)
		require.NoError(t, err)
		hctx, err := a.Semaphore(name).Acquire(t.Context())
		require.NoError(t, err)
		bDone := make(chan lockResult, 2)
		for range 2 {
			goLock(bDone, func() (context.Context, error) { return b.Semaphore(name).Acquire(t.Context()) })
		}
		time.Sleep(200 * time.Millisecond)
		cDone := make(chan lockResult, 1)
		goLock(cDone, func() (context.Context, error) { return cc.Semaphore(name).Acquire(t.Context()) })
		time.Sleep(200 * time.Millisecond)
		require.NoError(t, b.Close())
		for range 2 {
			r := receive(t, bDone, "b's waiter returns")
			require.ErrorIs(t, r.err, rlock.ErrClosed)
		}
		start := time.Now()
		require.NoError(t, a.Semaphore(name).Release(hctx))
		r := receive(t, cDone, "c's waiter")
		require.NoError(t, r.err)
		assert.Less(t, time.Since(start), time.Second)
		require.NoError(t, cc.Semaphore(name).Release(r.ctx))
	})
}

// threeClients returns a lock name and three Clients of one Redis with
// lease: a and cc closed when the test ends, b for the test to close.
func threeClients(t *testing.T, lease time.Duration) (name string, a, b, cc *rlock.Client) {
	t.Helper()
	node := redistest.Shared(t)
	b, err := rlock.New(node.Client(t), rlock.WithLeaseTime(lease))
	require.NoError(t, err)
	return redistest.LockName(t), newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)), b, newRlock(t, node.Client(t), rlock.WithLeaseTime(lease))
}

// lockResult is what a Lock returned.
type lockResult struct {
	ctx context.Context
	err error
}

// goLock runs lock on a goroutine of its own and sends what it returned
// to done.
func goLock(done chan<- lockResult, lock func() (context.Context, error)) {
	go func() {
		ctx, err := lock()
		done <- lockResult{ctx, err}
	}()
}
