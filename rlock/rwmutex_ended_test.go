package rlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/rlock"
)

// TestRWMutexLockAfterLostWriteHoldIsUpgrade: an owner takes the write
// lock with a fixed lease, downgrades (RLock beside it), and its write
// lease runs out: it now holds the read lock and not the write lock. Lock
// must answer ErrUpgrade at once (RWMutex.Lock's contract). It must not
// wait for the owner's own read hold, leaving a waiting mark that holds
// every new reader back meanwhile.
func TestRWMutexLockAfterLostWriteHoldIsUpgrade(t *testing.T) {
	c := sharedClient(t)
	name := redistest.LockName(t)
	rw := c.RWMutex(name)

	wctx, err := rw.LockFor(t.Context(), 300*time.Millisecond)
	require.NoError(t, err)
	rctx, err := rw.RLock(wctx) // downgrade: the read hold outlives the write hold
	require.NoError(t, err)
	defer func() { assert.NoError(t, rw.RUnlock(rctx)) }()

	select { // the write hold's fixed lease runs out
	case <-wctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the write hold's lease did not run out")
	}
	require.ErrorIs(t, context.Cause(wctx), rlock.ErrLockLost)
	time.Sleep(50 * time.Millisecond) // and Redis's, a drift later
	require.NoError(t, rctx.Err(), "the read hold lives on")
	writing, err := rw.IsWriteLocked(t.Context())
	require.NoError(t, err)
	require.False(t, writing, "nobody holds the write lock")
	reads, err := rw.RHoldCount(rctx)
	require.NoError(t, err)
	require.Equal(t, 1, reads, "the owner reads")

	// Another owner's reader, arriving while the owner asks for the write
	// lock, must not be held back by a write the owner can never get.
	other := make(chan error, 1)
	lctx, cancel := context.WithTimeout(rctx, 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	go func() {
		time.Sleep(300 * time.Millisecond)
		octx, ok, err := rw.TryRLock(t.Context(), 500*time.Millisecond, 0)
		if ok {
			err = errors.Join(err, rw.RUnlock(octx))
		} else if err == nil {
			err = errors.New("another owner's TryRLock was refused while nobody writes")
		}
		other <- err
	}()
	_, err = rw.Lock(lctx)
	took := time.Since(start)
	assert.ErrorIs(t, err, rlock.ErrUpgrade, "the owner reads and does not write: ErrUpgrade (got %v after %v)", err, took)
	assert.Less(t, took, time.Second, "ErrUpgrade comes at once")
	assert.NoError(t, <-other)
}

// TestRWMutexInspectShowsAdmittedReader: a reader waits for a writer;
// the write Unlock admits it (lua/rw.lua's admit) ahead of a writer that
// waits too, and it has not come in yet. Inspect lists "an RWMutex's
// waiting writers and readers": that reader still waits (it holds
// nothing), and must be among the Waiters, as it was a moment before.
func TestRWMutexInspectShowsAdmittedReader(t *testing.T) {
	c := sharedClient(t)
	rc := redistest.Shared(t).Client(t)
	name := redistest.LockName(t)
	rw := c.RWMutex(name)
	k := rwKeys(name)
	run := func(s *lua.Script, keys []string, field, seq, count, waiting string) []int64 {
		t.Helper()
		args := []string{field, seq, count, "30000", "0", "60000"}
		if s == lua.RWReadAcquire || s == lua.RWWriteAcquire {
			args = append(args, waiting)
		} else {
			args[3], args[4], args[5] = "publish", "0", "60000"
		}
		got, err := s.Exec(t.Context(), rc, keys, args).AsIntSlice()
		require.NoError(t, err)
		return got
	}
	acq, rel := []string{k.Hash, k.Token, k.Fence}, []string{k.Hash, k.Channel, k.Fence}
	require.Equal(t, int64(lua.Granted), run(lua.RWWriteAcquire, acq, "W:1:w", "1", "1", "0")[0])
	require.Equal(t, int64(lua.Refused), run(lua.RWReadAcquire, acq, "R:1:r", "1", "1", "1")[0])
	require.Equal(t, int64(lua.Refused), run(lua.RWWriteAcquire, acq, "V:1:w", "1", "1", "1")[0])
	st, err := rw.Inspect(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Waiters, 2, "the waiting reader and writer")

	require.Equal(t, int64(lua.Freed), run(lua.RWWriteRelease, rel, "W:1:w", "2", "0", "")[0])
	require.Equal(t, int64(lua.Refused), run(lua.RWWriteAcquire, acq, "V:1:w", "2", "1", "1")[0], "the writer waits for the admitted reader")
	st, err = rw.Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "nobody holds")
	var fields []string
	for _, w := range st.Waiters {
		fields = append(fields, w.Field)
	}
	assert.ElementsMatch(t, []string{"R:1:r", "V:1:w"}, fields, "the admitted reader still waits, and so does the writer (marks: %v)", st.Marks)
}
