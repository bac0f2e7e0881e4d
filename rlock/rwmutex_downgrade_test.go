package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestRWLastLiveReaderWakesWriterPastDeadReader: a writer waits
// behind two readers; one of them dies (its fixed lease runs out, as a
// process that died), and then the other, live one, RUnlocks. The lock is
// then free for the writer, which must get it promptly (a wake-up), not
// after sleeping out half a watchdog lease.
func TestRWLastLiveReaderWakesWriterPastDeadReader(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)

	// The live reader: default watchdog lease (30 s), renewed.
	live := newRlock(t, s.Client(t)).RWMutex(name)
	lctx, err := live.RLock(t.Context())
	require.NoError(t, err)
	// The dead reader: a fixed lease of 1 s that nobody renews or releases.
	dead := newRlock(t, s.Client(t)).RWMutex(name)
	_, ok, err := dead.TryRLock(t.Context(), 0, time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	writer := newRlock(t, s.Client(t)).RWMutex(name)
	type result struct {
		ctx context.Context
		ok  bool
		at  time.Time
	}
	wrote := make(chan result, 1)
	go func() {
		wctx, ok, err := writer.TryLock(t.Context(), 10*time.Second, 0)
		require.NoError(t, err)
		wrote <- result{wctx, ok, time.Now()}
	}()
	waitMarks(t, s.Client(t), name, 1)  // the writer waits, refused by both readers
	time.Sleep(1500 * time.Millisecond) // the dead reader's lease runs out
	released := time.Now()
	require.NoError(t, live.RUnlock(lctx))

	r := receive(t, wrote, "the writer's TryLock")
	require.True(t, r.ok, "the writer gets the lock once both readers are gone")
	took := r.at.Sub(released)
	if took > 3*time.Second {
		t.Errorf("the writer got the free lock %v after the last live reader left (want a wake-up, < 3s)", took)
	}
	require.NoError(t, writer.Unlock(r.ctx))
}

// TestRWDowngradeRLockHonoursCtx: RLock called with a context derived
// from the write hold's (a downgrade) must still stop waiting when that
// context is done, as every Lock does. Here the write hold was force-
// unlocked from another Client and another writer holds the lock, which
// this Client does not know yet (its watchdog renews every 10 s): the read
// acquire is refused and waits. Its ctx times out after 1 s; RLock must
// return with an error then, not wait for the other writer.
func TestRWDowngradeRLockHonoursCtx(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)

	other := newRlock(t, s.Client(t)).RWMutex(name)
	_, err = other.ForceUnlock(t.Context())
	require.NoError(t, err)
	octx, err := other.Lock(t.Context())
	require.NoError(t, err)

	type result struct {
		err error
		at  time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(wctx, time.Second)
		defer cancel()
		rctx, err := rw.RLock(ctx)
		if err == nil {
			_ = rw.RUnlock(rctx)
		}
		done <- result{err, time.Since(start)}
	}()
	select {
	case r := <-done:
		require.Error(t, r.err, "RLock with a done ctx while another writer holds the lock")
	case <-time.After(5 * time.Second):
		t.Errorf("RLock(ctx) still waits 5 s after ctx's 1 s timeout ran out")
		require.NoError(t, other.Unlock(octx)) // let it in, so that it returns
		r := <-done
		t.Logf("RLock returned after %v with err %v", r.at, r.err)
		return
	}
	require.NoError(t, other.Unlock(octx))
}

// TestRWDowngradeRLockWithDoneCtx: RLock with a context that is done
// already fails, as Lock does (a lock is never taken for a done context),
// also when that context carries the owner's write hold.
func TestRWDowngradeRLockWithDoneCtx(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	defer func() { require.NoError(t, rw.Unlock(wctx)) }()

	// Mutex.Lock's and RWMutex.Lock's re-entry refuse a done ctx.
	cctx, cancel := context.WithCancel(wctx)
	cancel()
	_, err = rw.Lock(cctx)
	require.Error(t, err, "a write re-entry with a done ctx")

	rctx, err := rw.RLock(cctx)
	if err == nil {
		n, _ := rw.RHoldCount(rctx)
		t.Errorf("RLock with a done ctx succeeded (read count now %d)", n)
		require.NoError(t, rw.RUnlock(rctx))
	}
}

// TestRWDowngradedReentryContextEndsWithHold: the owner writes, takes
// the read lock beside (a downgrade), and re-enters the read lock down the
// call chain with that read context while still writing. The context the
// re-entry returns must be done, with ErrLockLost, when the read hold is
// lost, as every lock context is ("done when the read hold ends").
func TestRWDowngradedReentryContextEndsWithHold(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	rctx, err := rw.RLock(wctx) // downgrade
	require.NoError(t, err)
	inner, err := rw.RLock(rctx) // re-entry, still writing
	require.NoError(t, err)
	n, err := rw.RHoldCount(inner)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	_, err = rw.ForceUnlock(t.Context()) // every hold is lost
	require.NoError(t, err)
	require.ErrorIs(t, context.Cause(wctx), rlock.ErrLockLost, "the write context ends")
	require.ErrorIs(t, context.Cause(rctx), rlock.ErrLockLost, "the read context ends")
	select {
	case <-inner.Done():
		require.ErrorIs(t, context.Cause(inner), rlock.ErrLockLost)
	case <-time.After(2 * time.Second):
		t.Errorf("the re-entry's context is not done 2 s after the read hold was lost (Err %v)", inner.Err())
	}
}

// TestRWWriteReentryThroughReadContextEndsWithWriteHold: the owner
// writes under a fixed lease, takes the read lock beside (a downgrade),
// and re-enters the write lock with that read context (down the call
// chain). When the write lease runs out the owner no longer writes: other
// readers may read. The context the write re-entry returned must then be
// done with ErrLockLost; a caller watching it must not go on writing
// beside those readers.
func TestRWWriteReentryThroughReadContextEndsWithWriteHold(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	wctx, err := rw.LockFor(t.Context(), 800*time.Millisecond)
	require.NoError(t, err)
	rctx, err := rw.RLock(wctx) // downgrade, renewed by the watchdog
	require.NoError(t, err)
	w2, err := rw.LockFor(rctx, 800*time.Millisecond) // write re-entry
	require.NoError(t, err)
	n, err := rw.HoldCount(w2)
	require.NoError(t, err)
	require.Equal(t, 2, n, "write count")

	select {
	case <-wctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the write hold's fixed lease did not end it")
	}
	require.ErrorIs(t, context.Cause(wctx), rlock.ErrLockLost, "the write hold is lost")
	time.Sleep(200 * time.Millisecond) // the write field's own lease ends in Redis too

	other := newRlock(t, s.Client(t)).RWMutex(name)
	octx, ok, err := other.TryRLock(t.Context(), 0, 0)
	require.NoError(t, err)
	if ok {
		defer func() { require.NoError(t, other.RUnlock(octx)) }()
	}
	if w2.Err() == nil {
		t.Errorf("the write re-entry's context is not done although the write hold was lost (another reader reads: %v)", ok)
	}
	require.NoError(t, rw.RUnlock(rctx))
}
