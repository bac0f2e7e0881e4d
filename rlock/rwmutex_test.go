package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestRWMutex runs the RWMutex suite on every Redis backend the harness
// offers, the Cluster included.
func TestRWMutex(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"ReadersShare":        testReadersShare,
		"Reentrant":           testRWReentrant,
		"WriterExcludes":      testWriterExcludes,
		"Downgrade":           testDowngrade,
		"Upgrade":             testUpgrade,
		"WriterPreferred":     testWriterPreferred,
		"WriterGivesUp":       testWriterGivesUp,
		"ReaderNotStarved":    testReaderNotStarved,
		"CancelWhileWaiting":  testRWCancelWhileWaiting,
		"CloseWakesWaiters":   testRWCloseWakesWaiters,
		"LeaseEndsHold":       testRWLeaseEndsHold,
		"DeadReaderAmongLive": testDeadReaderAmongLive,
		"FencingTokens":       testRWFencingTokens,
		"UnlockByNonOwner":    testRWUnlockByNonOwner,
	}
	redistest.ForEachSetup(t, func(t *testing.T, s redistest.Setup) {
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tc(t, s)
			})
		}
	})
}

// rwFields returns the fields of the lock's hash.
func rwFields(t *testing.T, rc rueidis.Client, name string) map[string]string {
	t.Helper()
	m, err := rc.Do(t.Context(), rc.B().Hgetall().Key(rwKeys(name).Hash).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// marks counts the waiting writers' marks in the lock's hash.
func marks(t *testing.T, rc rueidis.Client, name string) int {
	t.Helper()
	n := 0
	for f := range rwFields(t, rc, name) {
		if strings.HasSuffix(f, "#wait") {
			n++
		}
	}
	return n
}

// waitMarks waits until n waiting writers' marks are in the lock's hash.
func waitMarks(t *testing.T, rc rueidis.Client, name string, n int) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%d writers' marks in %s", n, name), func(context.Context) error {
		return redistest.Exactly("marks", marks(t, rc, name), n)
	})
}

func testReadersShare(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	a, b := newRlock(t, s.Client(t)).RWMutex(name), newRlock(t, s.Client(t)).RWMutex(name)
	actx, err := a.RLock(t.Context())
	require.NoError(t, err)
	bctx, ok, err := b.TryRLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "a second reader reads beside the first")
	n, err := a.ReadHolders(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "ReadHolders")
	w, err := a.IsWriteLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, w, "IsWriteLocked while only readers hold")
	lease, err := a.RemainingLease(t.Context())
	require.NoError(t, err)
	assert.Greater(t, lease, rlock.DefaultLeaseTime/2, "the watchdog lease is set")

	writer := newRlock(t, s.Client(t)).RWMutex(name)
	_, ok, err = writer.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a writer is refused while readers hold")

	require.NoError(t, a.RUnlock(actx))
	assert.ErrorIs(t, actx.Err(), context.Canceled, "the read context ends with its RUnlock")
	assert.NoError(t, bctx.Err(), "the other reader's context is intact")
	require.NoError(t, b.RUnlock(bctx))
	locked, err := a.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "IsLocked after the last RUnlock")

	wctx, ok, err := writer.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "the writer takes the free lock")
	require.NoError(t, writer.Unlock(wctx))
	raw := s.Client(t)
	assert.Equal(t, []string{rwKeys(name).Token}, redistest.LastingKeys(t, raw, rwKeys(name)), "only the fencing counter stays")
}

func testRWReentrant(t *testing.T, s redistest.Setup) {
	rw := newRlock(t, s.Client(t)).RWMutex(rlockName(t))
	r1, err := rw.RLock(t.Context())
	require.NoError(t, err)
	r2, err := rw.RLock(r1)
	require.NoError(t, err)
	n, err := rw.RHoldCount(r2)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "RHoldCount after two RLocks")
	require.NoError(t, rw.RUnlock(r2))
	assert.NoError(t, r1.Err(), "an inner RUnlock leaves the read context")
	require.NoError(t, rw.RUnlock(r1))
	assert.ErrorIs(t, rw.RUnlock(r1), rlock.ErrNotHeld, "one RUnlock too many")

	w1, err := rw.Lock(t.Context())
	require.NoError(t, err)
	w2, err := rw.Lock(w1)
	require.NoError(t, err)
	n, err = rw.HoldCount(w2)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "HoldCount after two Locks")
	require.NoError(t, rw.Unlock(w2))
	require.NoError(t, rw.Unlock(w1))
	assert.ErrorIs(t, rw.Unlock(w1), rlock.ErrNotHeld, "one Unlock too many")
}

// rlockName is the test's lock name.
func rlockName(t *testing.T) string { return redistest.LockName(t) }

func testWriterExcludes(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	writerClient := newRlock(t, s.Client(t))
	writer := writerClient.RWMutex(name)
	wctx, err := writer.Lock(t.Context())
	require.NoError(t, err)
	other := newRlock(t, s.Client(t)).RWMutex(name)
	_, ok, err := other.TryRLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a reader is refused while a writer holds")
	_, ok, err = other.TryLock(t.Context(), 50*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a second writer times out")

	// Readers of three Clients (other, and one new for each odd reader)
	// wait; one write Unlock lets them all in.
	const readers = 4
	got := make(chan error, readers)
	for i := range readers {
		rw := []*rlock.RWMutex{other, newRlock(t, s.Client(t)).RWMutex(name)}[i%2]
		go func() {
			ctx, err := rw.RLock(t.Context())
			if err == nil {
				_, err = rw.ReadHolders(ctx) // holds until the test reads the count
			}
			got <- err
		}()
	}
	waitWaiting(t, s.Client(t), rwKeys(name), 3) // the readers' three Clients
	start := time.Now()
	require.NoError(t, writer.Unlock(wctx))
	for range readers {
		require.NoError(t, receive(t, got, "a reader woken by the write Unlock"))
	}
	// Readers the Unlock did not wake would sleep out the writer's 30 s
	// lease: 5 s tells the two apart on a loaded machine too.
	assert.Less(t, time.Since(start), 5*time.Second, "readers woke on the Unlock, not on a lease")
	n, err := other.ReadHolders(t.Context())
	require.NoError(t, err)
	assert.Equal(t, readers, n, "every waiting reader reads")
}

func testDowngrade(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	rctx, err := rw.RLock(wctx)
	require.NoError(t, err, "the writer takes the read lock beside")
	require.NoError(t, rw.Unlock(rctx))
	assert.ErrorIs(t, wctx.Err(), context.Canceled, "the write context ends with Unlock")
	require.NoError(t, rctx.Err(), "the read context outlives the write hold")

	n, err := rw.RHoldCount(rctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "left reading")
	n, err = rw.HoldCount(rctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "no longer writing")

	other := newRlock(t, s.Client(t)).RWMutex(name)
	octx, ok, err := other.TryRLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "another reader joins the downgraded one")
	_, ok, err = other.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a writer is refused while the downgraded owner reads")
	require.NoError(t, other.RUnlock(octx))
	require.NoError(t, rw.RUnlock(rctx))
	locked, err := rw.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked)
}

func testUpgrade(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	rw := c.RWMutex(name)
	// The owner comes from another lock, so that the context given to Lock
	// carries the owner but not the read hold.
	mctx, err := c.Mutex(name + ":m").Lock(t.Context())
	require.NoError(t, err)
	rctx, err := rw.RLock(mctx)
	require.NoError(t, err)

	start := time.Now()
	_, err = rw.Lock(rctx)
	assert.ErrorIs(t, err, rlock.ErrUpgrade)
	_, ok, err := rw.TryLock(mctx, time.Minute, 0)
	assert.ErrorIs(t, err, rlock.ErrUpgrade, "the same owner through a context without the read hold")
	assert.False(t, ok)
	// A TryLock that waited would take its minute: 5 s tells the two apart.
	assert.Less(t, time.Since(start), 5*time.Second, "ErrUpgrade comes at once")

	require.NoError(t, rw.RUnlock(rctx))
	wctx, err := rw.Lock(mctx)
	require.NoError(t, err, "once it reads no more, the owner may write")
	require.NoError(t, rw.Unlock(wctx))
}

func testWriterPreferred(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	reader := newRlock(t, s.Client(t)).RWMutex(name)
	rctx, err := reader.RLock(t.Context())
	require.NoError(t, err)

	writer := newRlock(t, s.Client(t)).RWMutex(name)
	wrote := make(chan context.Context, 1)
	go func() {
		wctx, err := writer.Lock(t.Context())
		assert.NoError(t, err)
		wrote <- wctx
	}()
	raw := s.Client(t)
	waitMarks(t, raw, name, 1) // the writer waits

	lateRec := &hooktest.Recorder{}
	late := newRlock(t, s.Client(t), rlock.WithHooks(lateRec)).RWMutex(name)
	_, ok, err := late.TryRLock(t.Context(), 200*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a new reader waits behind a waiting writer")
	inner, err := reader.RLock(rctx)
	require.NoError(t, err, "a reader already holding re-enters")

	lateGot := make(chan error, 1)
	go func() {
		lctx, err := late.RLock(t.Context())
		if err == nil {
			err = late.RUnlock(lctx)
		}
		lateGot <- err
	}()
	require.NoError(t, reader.RUnlock(inner))
	require.NoError(t, reader.RUnlock(rctx))
	wctx := receive(t, wrote, "the writer woken by the last RUnlock")
	waitWaits(t, lateRec, 2) // the late reader's TryRLock waited, and now its RLock does
	select {
	case err := <-lateGot:
		t.Fatalf("a reader got in while the writer holds (err %v)", err)
	default:
	}
	require.NoError(t, writer.Unlock(wctx))
	require.NoError(t, receive(t, lateGot, "the reader woken by the write Unlock"))
	assert.Zero(t, marks(t, raw, name), "no waiting mark left")
}

func testWriterGivesUp(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	reader := newRlock(t, s.Client(t)).RWMutex(name)
	rctx, err := reader.RLock(t.Context())
	require.NoError(t, err)

	_, ok, err := newRlock(t, s.Client(t)).RWMutex(name).TryLock(t.Context(), 200*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "the writer times out")
	assert.Zero(t, marks(t, s.Client(t), name), "the writer took its waiting mark back")
	other := newRlock(t, s.Client(t)).RWMutex(name)
	octx, ok, err := other.TryRLock(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.True(t, ok, "readers read again at once")
	require.NoError(t, other.RUnlock(octx))
	require.NoError(t, reader.RUnlock(rctx))
}

func testRWCancelWhileWaiting(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	rctx, err := rw.RLock(t.Context())
	require.NoError(t, err)
	raw := s.Client(t)

	rec := &hooktest.Recorder{}
	waiter := newRlock(t, s.Client(t), rlock.WithHooks(rec)).RWMutex(name)
	// cancelWaiting cancels a call of waiter's once it is the n-th to wait,
	// and returns the call's error.
	cancelWaiting := func(n int, call func(context.Context) error) error {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		got := make(chan error, 1)
		go func() { got <- call(ctx) }()
		waitWaits(t, rec, n)
		cancel()
		return receive(t, got, "the cancelled call")
	}
	err = cancelWaiting(1, func(ctx context.Context) error { _, err := waiter.Lock(ctx); return err })
	assert.ErrorIs(t, err, context.Canceled, "a cancelled writer")
	assert.Zero(t, marks(t, raw, name), "the cancelled writer left no mark")
	require.NoError(t, rw.RUnlock(rctx))

	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	err = cancelWaiting(2, func(ctx context.Context) error { _, err := waiter.RLock(ctx); return err })
	assert.ErrorIs(t, err, context.Canceled, "a cancelled reader")
	require.NoError(t, rw.Unlock(wctx))
	assert.Equal(t, []string{rwKeys(name).Token}, redistest.LastingKeys(t, raw, rwKeys(name)), "the cancelled waiters left no hold")
	redistest.AssertNoSubscribers(t, raw, rwKeys(name))
}

func testRWCloseWakesWaiters(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	rctx, err := rw.RLock(t.Context())
	require.NoError(t, err)

	c := newRlock(t, s.Client(t))
	got := make(chan error, 2)
	go func() {
		_, err := c.RWMutex(name).Lock(t.Context())
		got <- err
	}()
	raw := s.Client(t)
	waitMarks(t, raw, name, 1) // the writer waits
	go func() {
		_, err := c.RWMutex(name).RLock(t.Context())
		got <- err
	}()
	waitMarks(t, raw, name, 2) // a reader waits behind it
	require.NoError(t, c.Close())
	for range 2 {
		assert.ErrorIs(t, receive(t, got, "a waiter woken by Close"), rlock.ErrClosed)
	}
	_, err = c.RWMutex(name).RLock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed, "RLock after Close")
	require.NoError(t, rw.RUnlock(rctx))
}

func testRWLeaseEndsHold(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	rctx, ok, err := rw.TryRLock(t.Context(), 0, 200*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	receive(t, rctx.Done(), "the end of a read context with a 200 ms lease")
	assert.ErrorIs(t, context.Cause(rctx), rlock.ErrLockLost)
	redistest.Eventually(t, "the read hold ends in Redis with its lease", func(ctx context.Context) error {
		n, err := rw.ReadHolders(ctx)
		if err != nil {
			return err
		}
		return redistest.Exactly("read holders", n, 0)
	})
	assert.ErrorIs(t, rw.RUnlock(rctx), rlock.ErrNotHeld, "RUnlock after the lease ended")
}

// TestRWWatchdogRenews: the watchdog renews read and write holds alike, in
// its rounds: a downgrading owner holds both for two leases. (Out of the
// suite's matrix, whose parallel tests would load the machine so much that
// a round comes late.)
func TestRWWatchdogRenews(t *testing.T) {
	const lease = 2 * time.Second
	rw := sharedClient(t, rlock.WithLeaseTime(lease)).RWMutex(redistest.LockName(t))
	w, err := rw.Lock(t.Context())
	require.NoError(t, err)
	r, err := rw.RLock(w)
	require.NoError(t, err)
	time.Sleep(2 * lease) // the thing under test: two leases pass, and only renewals keep the holds
	require.NoError(t, w.Err(), "the watchdog renewed the write hold (cause: %v)", context.Cause(w))
	require.NoError(t, r.Err(), "the watchdog renewed the read hold (cause: %v)", context.Cause(r))
	left, err := rw.RemainingLease(t.Context())
	require.NoError(t, err)
	assert.Greater(t, left, lease/3, "the holds' leases are being renewed")
	require.NoError(t, rw.Unlock(w))
	require.NoError(t, rw.RUnlock(r))
}

func testDeadReaderAmongLive(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	// A reader with a fixed lease stands for one whose process died: nothing
	// renews it. Another reader keeps renewing, so the key lives on.
	dead := newRlock(t, s.Client(t)).RWMutex(name)
	_, ok, err := dead.TryRLock(t.Context(), 0, 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	liveClient := newRlock(t, s.Client(t), rlock.WithLeaseTime(2*time.Second))
	live := liveClient.RWMutex(name)
	lctx, err := live.RLock(t.Context())
	require.NoError(t, err)

	start := time.Now()
	redistest.Eventually(t, "the dead reader stops holding", func(ctx context.Context) error {
		n, err := live.ReadHolders(ctx)
		if err != nil {
			return err
		}
		return redistest.Exactly("read holders", n, 1)
	})
	// Its 300 ms lease, with a loaded machine's margin: a reader that
	// outlived its lease would hold for as long as Patience.
	assert.Less(t, time.Since(start), 3*time.Second, "the dead reader stops holding within its lease")
	require.NoError(t, lctx.Err(), "the live reader holds on")

	writer := newRlock(t, s.Client(t)).RWMutex(name)
	wrote := make(chan context.Context, 1)
	go func() {
		wctx, ok, err := writer.TryLock(t.Context(), redistest.Patience, 0)
		assert.NoError(t, err)
		assert.True(t, ok, "the writer gets in once the live reader leaves")
		wrote <- wctx
	}()
	waitMarks(t, s.Client(t), name, 1) // the writer waits
	require.NoError(t, live.RUnlock(lctx))
	wctx := receive(t, wrote, "the writer's TryLock")
	if wctx != nil {
		require.NoError(t, writer.Unlock(wctx))
	}
}

func testRWFencingTokens(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	w1, err := rw.Lock(t.Context())
	require.NoError(t, err)
	t1, ok := rw.FencingToken(w1)
	require.True(t, ok)
	r1, err := rw.RLock(w1)
	require.NoError(t, err)
	rt, ok := rw.FencingToken(r1)
	require.True(t, ok)
	assert.Equal(t, t1, rt, "the write holder's read hold has the write token")
	require.NoError(t, rw.Unlock(r1))
	rt, ok = rw.FencingToken(r1)
	require.True(t, ok, "the read hold outlives the write hold")
	assert.Equal(t, t1, rt)
	require.NoError(t, rw.RUnlock(r1))

	reader := newRlock(t, s.Client(t)).RWMutex(name)
	r2, err := reader.RLock(t.Context())
	require.NoError(t, err)
	rt, ok = reader.FencingToken(r2)
	require.True(t, ok)
	assert.Equal(t, t1, rt, "a read token is the latest write's")
	require.NoError(t, reader.RUnlock(r2))
	_, ok = reader.FencingToken(r2)
	assert.False(t, ok, "no token once released")

	w2, err := rw.Lock(t.Context())
	require.NoError(t, err)
	t2, ok := rw.FencingToken(w2)
	require.True(t, ok)
	assert.Greater(t, t2, t1, "write tokens increase")
	require.NoError(t, rw.Unlock(w2))
}

func testRWUnlockByNonOwner(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	rw := newRlock(t, s.Client(t)).RWMutex(name)
	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	other := newRlock(t, s.Client(t)).RWMutex(name)
	assert.ErrorIs(t, other.Unlock(t.Context()), rlock.ErrNotHeld)
	assert.ErrorIs(t, other.RUnlock(t.Context()), rlock.ErrNotHeld)
	assert.ErrorIs(t, rw.RUnlock(wctx), rlock.ErrNotHeld, "the writer holds no read lock")
	n, err := rw.HoldCount(wctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the holder's lock is intact")
	require.NoError(t, rw.Unlock(wctx))
}

// TestRWMutexBadInput: bad input gets a matchable error at once, never a
// panic.
func TestRWMutexBadInput(t *testing.T) {
	ctx := t.Context()
	var zero rlock.Client
	_, err := zero.RWMutex("x").RLock(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient, "a Client not made by New")
	var nilRW *rlock.RWMutex
	_, err = nilRW.Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient, "a nil handle")
	assert.ErrorIs(t, nilRW.RUnlock(ctx), rlock.ErrNilClient)
	_, err = nilRW.ReadHolders(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	_, ok := nilRW.FencingToken(ctx)
	assert.False(t, ok)
	assert.Empty(t, nilRW.Name())

	c := sharedClient(t)
	_, err = c.RWMutex("").RLock(ctx)
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	_, ok = c.RWMutex("").FencingToken(ctx)
	assert.False(t, ok)
	rw := c.RWMutex(redistest.LockName(t))
	_, _, err = rw.TryRLock(ctx, -time.Second, 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	_, _, err = rw.TryLock(ctx, 0, time.Millisecond)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = rw.Lock(nil)
	assert.ErrorIs(t, err, rlock.ErrNilContext)
	assert.ErrorIs(t, rw.Unlock(ctx), rlock.ErrNotHeld, "Unlock with no owner")

	closed := newRlock(t, redistest.Shared(t).Client(t))
	require.NoError(t, closed.Close())
	_, err = closed.RWMutex("x").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrClosed)
	_, err = closed.RWMutex("x").IsLocked(ctx)
	assert.ErrorIs(t, err, rlock.ErrClosed)
}

// testReaderNotStarved: two writers of two Clients take turns without a
// pause, so one of them always waits; a reader still gets in, admitted by
// a write Unlock ahead of the writer waiting then.
func testReaderNotStarved(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var writes atomic.Int32
	for range 2 {
		rw := newRlock(t, s.Client(t)).RWMutex(name)
		wg.Go(func() {
			for ctx.Err() == nil {
				wctx, err := rw.Lock(ctx)
				if err != nil {
					return
				}
				writes.Add(1)
				time.Sleep(2 * time.Millisecond) // a write hold, so that the other writer waits
				assert.NoError(t, rw.Unlock(wctx))
			}
		})
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	redistest.Eventually(t, "the writers take turns", func(context.Context) error {
		if n := writes.Load(); n < 5 {
			return fmt.Errorf("%d writes", n)
		}
		return nil
	})
	reader := newRlock(t, s.Client(t)).RWMutex(name)
	for range 3 {
		rctx, ok, err := reader.TryRLock(t.Context(), 10*time.Second, 0)
		require.NoError(t, err)
		require.True(t, ok, "the reader gets in between the writers")
		require.NoError(t, reader.RUnlock(rctx))
	}
}
