package rlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Travelling permits (AcquirePermit, ReleasePermit, ExtendPermit): taken
// on one Client, given back on another, drawing from the same permits as
// Acquire, and gone by themselves when their lease runs out.

// newPermits returns a semaphore of n permits, and its handle on a second
// Client of the same Redis: a process the permits travel to.
func newPermits(t *testing.T, n int) (front, worker *rlock.Semaphore) {
	t.Helper()
	name := redistest.LockName(t)
	front, worker = sharedClient(t).Semaphore(name), sharedClient(t).Semaphore(name)
	_, err := front.TrySetPermits(t.Context(), n)
	require.NoError(t, err)
	return front, worker
}

// holderFields returns the fields of sem's holders hash.
func holderFields(t *testing.T, sem *rlock.Semaphore) map[string]string {
	t.Helper()
	rc := redistest.Shared(t).Client(t)
	m, err := rc.Do(t.Context(), rc.B().Hgetall().Key(semaphoreKeys(sem.Name()).Hash).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// TestPermitTravels: a permit taken on one Client is given back on
// another; it is a holder in the semaphore's hash meanwhile, and a second
// release of it, an unknown id and a malformed one are ErrNotHeld and free
// nothing.
func TestPermitTravels(t *testing.T) {
	front, worker := newPermits(t, 2)
	id, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	assert.Len(t, id, 26)
	other, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, id, other, "each permit has its own id")
	assert.Equal(t, 0, available(t, worker))
	fields := holderFields(t, front)
	assert.Equal(t, "1", fields["permit:"+id], "the permit is a holder an operator sees")
	assert.Contains(t, fields, "permit:"+id+"#exp", "with its own lease")

	require.NoError(t, worker.ReleasePermit(t.Context(), id), "another Client gives it back")
	assert.Equal(t, 1, available(t, front))
	assert.ErrorIs(t, worker.ReleasePermit(t.Context(), id), rlock.ErrNotHeld, "a permit is given back once")
	assert.ErrorIs(t, front.ReleasePermit(t.Context(), id), rlock.ErrNotHeld, "on any Client")
	unknown := strings.Repeat("A", 26)
	assert.ErrorIs(t, worker.ReleasePermit(t.Context(), unknown), rlock.ErrNotHeld, "an id nobody took")
	for _, bad := range []string{"", "permit", id + "#exp", strings.ToLower(other), other[:25]} {
		err := worker.ReleasePermit(t.Context(), bad)
		assert.ErrorIs(t, err, rlock.ErrNotHeld, "%q", bad)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, "%q", bad)
		assert.ErrorIs(t, worker.ExtendPermit(t.Context(), bad, time.Minute), rlock.ErrNotHeld, "%q", bad)
	}
	assert.Equal(t, 1, available(t, front), "no failed release freed a permit")

	require.NoError(t, worker.ReleasePermit(t.Context(), other))
	assert.Equal(t, 2, available(t, front))
	assert.False(t, exists(t, redistest.Shared(t).Client(t), semaphoreKeys(front.Name()).Hash), "no holder left")
}

// testPermitTravels, on every setup (TestSemaphoreAndLatch): a permit
// that a Client waits for is taken when another Client's travelling
// permit comes back, and given back in turn by a third Client.
func testPermitTravels(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	front, waiter, worker := newRlock(t, s.Client(t)).Semaphore(name), newRlock(t, s.Client(t)).Semaphore(name), newRlock(t, s.Client(t)).Semaphore(name)
	_, err := front.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	id, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	ids := make(chan string, 1)
	go acquirePermitInto(t, waiter, ids)
	redistest.WaitSubscribers(t, s.Client(t), semaphoreKeys(name).Channel, 1)
	require.NoError(t, worker.ReleasePermit(t.Context(), id))
	next := receive(t, ids, "the waiting AcquirePermit")
	require.NotEmpty(t, next)
	assert.Equal(t, 0, available(t, worker), "the waiter took the permit that came back")
	require.NoError(t, worker.ExtendPermit(t.Context(), next, 2*time.Minute))
	require.NoError(t, worker.ReleasePermit(t.Context(), next))
	assert.ErrorIs(t, front.ReleasePermit(t.Context(), next), rlock.ErrNotHeld)
	assert.Equal(t, 1, available(t, front))
}

// TestPermitBadArguments: a lease below MinLease (there is no default: a
// permit nobody renews must end by itself) and a negative wait are
// refused at once; a nil handle and a closed Client answer as for Acquire.
func TestPermitBadArguments(t *testing.T) {
	front, _ := newPermits(t, 1)
	for _, lease := range []time.Duration{-time.Second, 0, rlock.MinLease - 1} {
		_, err := front.AcquirePermit(t.Context(), lease)
		assert.ErrorIs(t, err, rlock.ErrInvalidDuration, "lease %v", lease)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, "lease %v", lease)
	}
	_, _, err := front.TryAcquirePermit(t.Context(), -time.Second, time.Minute)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	id, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	assert.ErrorIs(t, front.ExtendPermit(t.Context(), id, 0), rlock.ErrInvalidDuration)
	require.NoError(t, front.ReleasePermit(t.Context(), id))

	var nilSem *rlock.Semaphore
	_, err = nilSem.AcquirePermit(t.Context(), time.Minute)
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	assert.ErrorIs(t, nilSem.ReleasePermit(t.Context(), id), rlock.ErrNilClient)
	//lint:ignore SA1012 a nil context is the bad input under test
	assert.ErrorIs(t, front.ReleasePermit(nil, id), rlock.ErrNilContext)

	c, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = c.Semaphore(front.Name()).AcquirePermit(t.Context(), time.Minute)
	assert.ErrorIs(t, err, rlock.ErrClosed)
	assert.ErrorIs(t, c.Semaphore(front.Name()).ReleasePermit(t.Context(), id), rlock.ErrClosed)
	assert.Equal(t, 1, available(t, front), "nothing was taken")
}

// TestPermitTryAcquire: with no permit free, TryAcquirePermit answers "",
// false and nil at once (wait 0) or after its wait.
func TestPermitTryAcquire(t *testing.T) {
	front, worker := newPermits(t, 1)
	id, ok, err := front.TryAcquirePermit(t.Context(), 0, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	none, ok, err := worker.TryAcquirePermit(t.Context(), 0, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "no second permit of one")
	assert.Empty(t, none)
	start := time.Now()
	_, ok, err = worker.TryAcquirePermit(t.Context(), 100*time.Millisecond, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "nor within a wait")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "it waited")
	require.NoError(t, worker.ReleasePermit(t.Context(), id))
}

// TestPermitSharesPermitsWithAcquire: a context-bound Acquire and a
// travelling permit draw from the same permits, and a waiter of either
// kind is woken by a permit of either kind coming back, at once, not when
// a lease runs out (the leases here are a minute).
func TestPermitSharesPermitsWithAcquire(t *testing.T) {
	front, worker := newPermits(t, 2)
	pctx, err := front.Acquire(t.Context())
	require.NoError(t, err)
	id, err := worker.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	_, ok, err := front.TryAcquire(t.Context(), 0, 0)
	require.NoError(t, err)
	assert.False(t, ok, "Acquire finds both permits taken")
	_, ok, err = front.TryAcquirePermit(t.Context(), 0, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "and so does AcquirePermit")

	// A context waiter, woken by a travelling permit given back.
	got := make(chan context.Context, 1)
	go acquireInto(t, front, got)
	waitSubscribed(t, front.Name(), 1)
	start := time.Now()
	require.NoError(t, worker.ReleasePermit(t.Context(), id))
	cctx := receive(t, got, "the Acquire waiting for a permit")
	require.NotNil(t, cctx)
	t.Logf("an Acquire got the permit ReleasePermit gave back after %v", time.Since(start))
	assert.Less(t, time.Since(start), 5*time.Second, "woken by the release, not a lease")

	// A permit waiter, woken by a context's permit given back.
	waitSubscribed(t, front.Name(), 0) // the first waiter left
	ids := make(chan string, 1)
	go acquirePermitInto(t, worker, ids)
	waitSubscribed(t, front.Name(), 1)
	start = time.Now()
	require.NoError(t, front.Release(pctx))
	id = receive(t, ids, "the AcquirePermit waiting for a permit")
	require.NotEmpty(t, id)
	t.Logf("an AcquirePermit got the permit Release gave back after %v", time.Since(start))
	assert.Less(t, time.Since(start), 5*time.Second, "woken by the release, not a lease")

	require.NoError(t, front.Release(cctx))
	require.NoError(t, front.ReleasePermit(t.Context(), id))
	assert.Equal(t, 2, available(t, front))
}

// acquireInto sends the context of a permit of sem that Acquire waited
// for to got (nil when it failed).
func acquireInto(t *testing.T, sem *rlock.Semaphore, got chan<- context.Context) {
	ctx, err := sem.Acquire(t.Context())
	assert.NoError(t, err)
	got <- ctx
}

// acquirePermitInto sends the id of a permit of sem that AcquirePermit
// waited for to got ("" when it failed).
func acquirePermitInto(t *testing.T, sem *rlock.Semaphore, got chan<- string) {
	id, err := sem.AcquirePermit(t.Context(), time.Minute)
	assert.NoError(t, err)
	got <- id
}

// waitSubscribed waits until n Clients are subscribed to semaphore name's
// channel: their waiters sleep there.
func waitSubscribed(t *testing.T, name string, n int64) {
	t.Helper()
	redistest.WaitSubscribers(t, redistest.Shared(t).Client(t), semaphoreKeys(name).Channel, n)
}

// TestPermitLease: a permit's lease frees it by itself, in Redis's time,
// and a waiter gets it then; ExtendPermit keeps one past its first lease;
// a permit whose lease passed can be neither extended nor given back, and
// freeing it took nothing else.
func TestPermitLease(t *testing.T) {
	const lease = 300 * time.Millisecond
	front, worker := newPermits(t, 2)
	kept, err := front.AcquirePermit(t.Context(), lease)
	require.NoError(t, err)
	lapsed, err := front.AcquirePermit(t.Context(), lease)
	require.NoError(t, err)
	for range 4 {
		time.Sleep(lease / 3) // a worker that reports progress
		require.NoError(t, worker.ExtendPermit(t.Context(), kept, lease))
	}
	// By now (4/3 of the lease) lapsed has come back; a waiter got it.
	id, ok, err := worker.TryAcquirePermit(t.Context(), 5*time.Second, time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "the permit whose lease ran out came back")
	assert.ErrorIs(t, worker.ExtendPermit(t.Context(), lapsed, time.Minute), rlock.ErrNotHeld, "a lapsed permit is not revived")
	assert.ErrorIs(t, worker.ReleasePermit(t.Context(), lapsed), rlock.ErrNotHeld, "nor given back")
	assert.Equal(t, 0, available(t, front), "the extended permit is held still, and the new one")
	assert.NotContains(t, holderFields(t, front), "permit:"+lapsed, "the lapsed permit left the hash")

	require.NoError(t, worker.ExtendPermit(t.Context(), kept, time.Millisecond*20), "a shorter lease is no error")
	time.Sleep(lease / 2) // longer than the 20 ms asked: the lease was not shortened
	require.NoError(t, front.ReleasePermit(t.Context(), kept), "it was not shortened")
	require.NoError(t, front.ReleasePermit(t.Context(), id))
	assert.Equal(t, 2, available(t, front))
}

// TestPermitCloseWhileWaiting: Close wakes an AcquirePermit that waits,
// which returns ErrClosed and holds nothing.
func TestPermitCloseWhileWaiting(t *testing.T) {
	front, _ := newPermits(t, 1)
	id, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	c, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	errs := make(chan error, 1)
	go func() {
		_, err := c.Semaphore(front.Name()).AcquirePermit(t.Context(), time.Minute)
		errs <- err
	}()
	waitSubscribed(t, front.Name(), 1)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, receive(t, errs, "the waiting AcquirePermit"), rlock.ErrClosed)
	require.NoError(t, front.ReleasePermit(t.Context(), id))
	assert.Equal(t, 1, available(t, front), "the closed waiter took nothing")
}
