package rlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

func TestInspectMutex(t *testing.T) {
	node := redistest.Shared(t)
	c := sharedClient(t)
	name := redistest.LockName(t)
	mu := c.Mutex(name)

	st, err := c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.LockState{Name: name, Kind: rlock.KindMutex, Key: lockKeys(name).Hash, Type: "none"}, st, "a lock never taken")

	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	ctx, err = mu.Lock(ctx)
	require.NoError(t, err)
	token, _ := mu.FencingToken(ctx)

	// A waiter through another Client.
	waiter, stranger := sharedClient(t).Mutex(name), sharedClient(t).Mutex(name)
	waiting := make(chan error, 1)
	go func() {
		wctx, err := waiter.Lock(t.Context())
		if err == nil {
			err = stranger.Unlock(wctx) // not its owner's Client: ErrNotHeld
		}
		waiting <- err
	}()
	require.Eventually(t, func() bool {
		st, err = mu.Inspect(t.Context())
		// The waiter subscribes before its next ask marks the lock: wait for both.
		return err == nil && st.Subscribers == 1 && st.Marks["waiters"] == "1"
	}, 10*time.Second, 5*time.Millisecond, "the waiter's subscription and its mark show")
	assert.Equal(t, "hash", st.Type)
	require.Len(t, st.Holders, 1)
	h := st.Holders[0]
	assert.True(t, h.Local, "held through this Client")
	assert.Equal(t, 2, h.Count, "held twice")
	assert.Equal(t, token, h.Token, "the holder's token")
	assert.Zero(t, h.Lease, "a Mutex hold has no lease of its own")
	assert.Equal(t, token, st.FencingToken)
	assert.Greater(t, st.Lease, rlock.DefaultLeaseTime/2)
	assert.LessOrEqual(t, st.Lease, rlock.DefaultLeaseTime)
	assert.Equal(t, map[string]string{"waiters": "1"}, st.Marks, "only the waiter's mark")

	require.NoError(t, mu.Unlock(ctx))
	require.NoError(t, mu.Unlock(ctx))
	require.ErrorIs(t, <-waiting, rlock.ErrNotHeld)
	raw := node.Client(t)
	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(lockKeys(name).Hash).Build()).Error())
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	assert.Equal(t, token+1, st.FencingToken, "the waiter's token was the last handed out")
}

// TestInspectSharedHolds reads a hash as a primitive with own leases
// (readers, permits) leaves it: several holders, F#exp, marks of its own.
func TestInspectSharedHolds(t *testing.T) {
	raw := redistest.Shared(t).Client(t)
	c := sharedClient(t)
	name := redistest.LockName(t)
	key := lockKeys(name).Hash
	ends := strconv.FormatInt(redistest.Millis(t, raw)+5000, 10)
	require.NoError(t, raw.Do(t.Context(), raw.B().Hset().Key(key).FieldValue().
		FieldValue("a:1:r", "2").FieldValue("a:1:r#seq", "7").FieldValue("a:1:r#exp", ends).
		FieldValue("b:9:r", "1").FieldValue("b:9:r#seq", "3").
		FieldValue("mode", "read").FieldValue("x#exp", "1").Build()).Error())
	require.NoError(t, raw.Do(t.Context(), raw.B().Pexpire().Key(key).Milliseconds(60000).Build()).Error())
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(key).Build()) })

	st, err := c.Inspect(t.Context(), name)
	require.NoError(t, err)
	require.Len(t, st.Holders, 2)
	a, b := st.Holders[0], st.Holders[1]
	assert.Equal(t, "a:1:r", a.Field)
	assert.Equal(t, 2, a.Count)
	assert.False(t, a.Local)
	assert.Greater(t, a.Lease, 3*time.Second, "own lease measured on Redis's clock")
	assert.LessOrEqual(t, a.Lease, 6*time.Second)
	assert.Equal(t, "b:9:r", b.Field)
	assert.Zero(t, b.Lease)
	assert.Equal(t, map[string]string{"mode": "read", "x#exp": "1"}, st.Marks, "fields of no holder are marks")
	assert.Greater(t, st.Lease, 50*time.Second)

	// A key that is no lock is shown as what it is.
	require.NoError(t, raw.Do(t.Context(), raw.B().Set().Key(key).Value("x").Build()).Error())
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, "string", st.Type)
	assert.Empty(t, st.Holders)
	assert.Equal(t, time.Duration(-1), st.Lease, "no expiry")
}

func TestInspectBadInput(t *testing.T) {
	c := sharedClient(t)
	_, err := c.Inspect(t.Context(), "")
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = c.Inspect(nil, "x")
	assert.ErrorIs(t, err, rlock.ErrNilContext)
	var nilClient *rlock.Client
	_, err = nilClient.Inspect(t.Context(), "x")
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	var nilMutex *rlock.Mutex
	_, err = nilMutex.Inspect(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = closed.Inspect(t.Context(), "x")
	assert.ErrorIs(t, err, rlock.ErrClosed)
}

// TestInspectKinds runs each kind's Inspect, held, waited for and free,
// and Client.Inspect's search for the kind, on every backend, the Cluster
// included.
func TestInspectKinds(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"FairMutex":      testInspectFair,
		"RWMutex":        testInspectRW,
		"Semaphore":      testInspectSemaphore,
		"Latch":          testInspectLatch,
		"KindsOfOneName": testInspectKindsOfOneName,
		"Grouped":        testInspectGrouped,
		"Permit":         testInspectPermit,
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

// assertLeased checks that a lease is what is left of one of lease.
func assertLeased(t *testing.T, got, lease time.Duration, what string) {
	t.Helper()
	assert.Greater(t, got, lease/2, what)
	assert.LessOrEqual(t, got, lease, what)
}

// testInspectFair: a fair lock's holder with its token, and its two
// waiters in the order they queued, one of them local; free once all are
// done.
func testInspectFair(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	raw := s.Client(t)
	c, other := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	fm := c.FairMutex(name)
	st, err := fm.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, rlock.LockState{Name: name, Kind: rlock.KindFairMutex, Key: fairKeys(name).Hash, Type: "none"}, st, "never taken")

	ctx, err := fm.Lock(t.Context())
	require.NoError(t, err)
	token, _ := fm.FencingToken(ctx)
	done := make(chan error, 2)
	for i, waiter := range []*rlock.FairMutex{other.FairMutex(name), c.FairMutex(name)} {
		go func() {
			wctx, err := waiter.Lock(t.Context())
			if err == nil {
				err = waiter.Unlock(wctx)
			}
			done <- err
		}()
		waitQueued(t, raw, name, i+1)
	}
	line := queued(t, raw, name)

	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.KindFairMutex, st.Kind, "Client.Inspect finds the fair lock")
	assert.Equal(t, "hash", st.Type)
	require.Len(t, st.Holders, 1)
	assert.True(t, st.Holders[0].Local)
	assert.Equal(t, 1, st.Holders[0].Count)
	assert.Equal(t, token, st.Holders[0].Token)
	assert.Equal(t, token, st.FencingToken)
	assertLeased(t, st.Lease, rlock.DefaultLeaseTime, "the holder's lease")
	require.Len(t, st.Waiters, 2)
	assert.Equal(t, line, []string{st.Waiters[0].Field, st.Waiters[1].Field}, "the queue, first to last")
	assert.False(t, st.Waiters[0].Local, "queued first, through the other Client")
	assert.True(t, st.Waiters[1].Local, "queued second, through this one")
	for _, w := range st.Waiters {
		assertLeased(t, w.Lease, rlock.DefaultLeaseTime, "a queued waiter's own lease")
	}

	require.NoError(t, fm.Unlock(ctx))
	require.NoError(t, receive(t, done, "first waiter"))
	require.NoError(t, receive(t, done, "second waiter"))
	st, err = fm.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "none", st.Type)
	assert.Empty(t, st.Holders)
	assert.Empty(t, st.Waiters)
	assert.Equal(t, token+2, st.FencingToken, "each waiter was handed a token")
}

// testInspectRW: two readers, one local, with their own leases and the
// read token; a waiting writer; then the writer holding with its token.
func testInspectRW(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c, other := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	rw, orw := c.RWMutex(name), other.RWMutex(name)
	st, err := rw.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, rlock.LockState{Name: name, Kind: rlock.KindRWMutex, Key: rwKeys(name).Hash, Type: "none"}, st, "never taken")

	r1, err := rw.RLock(t.Context())
	require.NoError(t, err)
	r2, err := orw.RLock(t.Context())
	require.NoError(t, err)
	readToken, _ := rw.FencingToken(r1)
	type write struct {
		ctx   context.Context
		token int64
		err   error
	}
	wrote := make(chan write, 1)
	go func() {
		wctx, err := orw.Lock(t.Context())
		token, _ := orw.FencingToken(wctx)
		wrote <- write{wctx, token, err}
	}()
	require.Eventually(t, func() bool {
		st, err = c.Inspect(t.Context(), name)
		return err == nil && len(st.Waiters) == 1
	}, redistest.Patience, 5*time.Millisecond, "the writer's waiting mark shows")
	assert.Equal(t, rlock.KindRWMutex, st.Kind, "Client.Inspect finds the read-write lock")
	require.Len(t, st.Holders, 2)
	local := 0
	for _, h := range st.Holders {
		assert.True(t, strings.HasSuffix(h.Field, ":r"), "%s is a read hold", h.Field)
		assert.Equal(t, 1, h.Count)
		assert.Equal(t, readToken, h.Token, "a reader's token is the latest write's")
		assertLeased(t, h.Lease, rlock.DefaultLeaseTime, "a read hold's own lease")
		if h.Local {
			local++
		}
	}
	assert.Equal(t, 1, local, "one reader is this Client's")
	assert.True(t, strings.HasSuffix(st.Waiters[0].Field, ":w"), "%s is a writer", st.Waiters[0].Field)
	assert.False(t, st.Waiters[0].Local)
	assert.Positive(t, st.Waiters[0].Lease)
	assert.Equal(t, "rw", st.Marks["mode"])

	require.NoError(t, rw.RUnlock(r1))
	require.NoError(t, orw.RUnlock(r2))
	w := receive(t, wrote, "the writer")
	require.NoError(t, w.err)
	st, err = rw.Inspect(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Holders, 1)
	assert.True(t, strings.HasSuffix(st.Holders[0].Field, ":w"), "the write hold")
	assert.False(t, st.Holders[0].Local)
	assert.Equal(t, w.token, st.Holders[0].Token)
	assert.Greater(t, w.token, readToken)
	assert.Empty(t, st.Waiters)
	require.NoError(t, orw.Unlock(w.ctx))
}

// testInspectSemaphore: permits, free ones, a holder of two, a waiter's
// mark and subscription; free again after.
func testInspectSemaphore(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c, other := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	sem := c.Semaphore(name)
	set, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, set)
	st, err := c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.LockState{
		Name: name, Kind: rlock.KindSemaphore, Key: semaphoreKeys(name).Hash, Type: "none", Permits: 2, Available: 2,
	}, st, "Client.Inspect finds a semaphore with permits and no holder")

	ctx, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	ctx, err = sem.Acquire(ctx)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		osem := other.Semaphore(name)
		wctx, err := osem.Acquire(t.Context())
		if err == nil {
			err = osem.Release(wctx)
		}
		waited <- err
	}()
	require.Eventually(t, func() bool {
		st, err = sem.Inspect(t.Context())
		return err == nil && st.Subscribers == 1 && st.Marks["waiters"] == "1"
	}, redistest.Patience, 5*time.Millisecond, "the waiter's subscription and mark show")
	require.Len(t, st.Holders, 1)
	h := st.Holders[0]
	assert.True(t, h.Local)
	assert.Equal(t, 2, h.Count, "two permits on one context")
	assert.Zero(t, h.Token, "permits have no fencing token")
	assertLeased(t, h.Lease, rlock.DefaultLeaseTime, "a permit's own lease")
	assert.Equal(t, 2, st.Permits)
	assert.Zero(t, st.Available)
	assert.Zero(t, st.FencingToken)
	assert.Empty(t, st.Waiters, "a semaphore's waiters keep no entry")

	require.NoError(t, sem.Release(ctx))
	require.NoError(t, sem.Release(ctx))
	require.NoError(t, receive(t, waited, "the waiter"))
	st, err = sem.Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	assert.Equal(t, 2, st.Available)
}

// testInspectPermit: a travelling permit is a holder of its own, on no
// Client, with its lease.
func testInspectPermit(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	sem := c.Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	id, err := sem.AcquirePermit(t.Context(), 5*time.Second)
	require.NoError(t, err)
	st, err := sem.Inspect(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Holders, 1)
	h := st.Holders[0]
	assert.Equal(t, "permit:"+id, h.Field)
	assert.False(t, h.Local, "a travelling permit is no Client's")
	assert.Equal(t, 1, h.Count)
	assertLeased(t, h.Lease, 5*time.Second, "the permit's lease")
	assert.Equal(t, 1, st.Available)
	require.NoError(t, sem.ReleasePermit(t.Context(), id))
	st, err = sem.Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	assert.Equal(t, 2, st.Available)
}

// testInspectLatch: a latch's count, persistent while it counts.
func testInspectLatch(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	l := c.CountDownLatch(name)
	st, err := l.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, rlock.LockState{Name: name, Kind: rlock.KindLatch, Key: latchKeys(name).Hash, Type: "none"}, st, "never set")

	set, err := l.TrySetCount(t.Context(), 3)
	require.NoError(t, err)
	require.True(t, set)
	require.NoError(t, l.CountDown(t.Context()))
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.KindLatch, st.Kind, "Client.Inspect finds the latch")
	assert.Equal(t, 2, st.Count)
	assert.Equal(t, "hash", st.Type)
	assert.Equal(t, time.Duration(-1), st.Lease, "a counting latch does not expire")
	assert.Empty(t, st.Holders, "a latch has no holders")
	assert.Equal(t, "2", st.Marks["count"])
}

// testInspectKindsOfOneName: a Mutex and a Semaphore of one name are two
// locks; Client.Inspect shows the first that is there, each handle its
// own.
func testInspectKindsOfOneName(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	mu, sem := c.Mutex(name), c.Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	st, err := c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.KindMutex, st.Kind, "the Mutex comes first")
	require.Len(t, st.Holders, 1)
	st, err = sem.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, rlock.KindSemaphore, st.Kind)
	assert.Equal(t, 1, st.Available, "the Mutex holds no permit")

	require.NoError(t, mu.Unlock(ctx))
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.KindSemaphore, st.Kind, "a free Mutex is not there: the semaphore is found")
	st, err = mu.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "none", st.Type)
	assert.Positive(t, st.FencingToken, "a free Mutex's counter stays")
}

// testInspectGrouped: a grouped lock says its group.
func testInspectGrouped(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	mu := c.GroupedMutex("group}"+name, name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)
	st, err := mu.Inspect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "group}"+name, st.Group)
	assert.Equal(t, name, st.Name)
	assert.Equal(t, rlock.KindMutex, st.Kind)
	assert.Equal(t, keys.NewGrouped(rlock.DefaultKeyPrefix, "group}"+name, name).Hash, st.Key)
	require.Len(t, st.Holders, 1)
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "Mutex(name) is another lock")
}

// TestInspectDeadEntries reads a fair queue and a semaphore as a dead
// process leaves them, and writes nothing: a waiter and a holder whose own
// leases ended are left out, and stay in Redis for the scripts to drop.
func TestInspectDeadEntries(t *testing.T) {
	raw := redistest.Shared(t).Client(t)
	c := sharedClient(t)
	name := redistest.LockName(t)
	fk, sk := fairKeys(name), semaphoreKeys(name)
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(fk.Queue, sk.Hash, sk.Token).Build()) })
	later := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	require.NoError(t, raw.Do(t.Context(), raw.B().Hset().Key(fk.Queue).FieldValue().
		FieldValue("#head", "a:1").FieldValue("a:1", "1").FieldValue("a:1#exp", "1").FieldValue("a:1#next", "b:2").
		FieldValue("b:2", "1").FieldValue("b:2#exp", later).FieldValue("b:2#prev", "a:1").
		FieldValue("#last", "b:2").Build()).Error())
	require.NoError(t, raw.Do(t.Context(), raw.B().Hset().Key(sk.Hash).FieldValue().
		FieldValue("h:1", "1").FieldValue("h:1#seq", "4").FieldValue("h:1#exp", "1").
		FieldValue("h:2", "1").FieldValue("h:2#seq", "5").FieldValue("h:2#exp", later).Build()).Error())
	require.NoError(t, raw.Do(t.Context(), raw.B().Set().Key(sk.Token).Value("3").Build()).Error())
	before := func(key string) map[string]string {
		m, err := raw.Do(t.Context(), raw.B().Hgetall().Key(key).Build()).AsStrMap()
		require.NoError(t, err)
		return m
	}
	queue, holders := before(fk.Queue), before(sk.Hash)

	st, err := c.FairMutex(name).Inspect(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Waiters, 1)
	assert.Equal(t, "b:2", st.Waiters[0].Field, "the dead head is left out")
	st, err = c.Semaphore(name).Inspect(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Holders, 1)
	assert.Equal(t, "h:2", st.Holders[0].Field, "the dead holder is left out")
	assert.Empty(t, st.Marks, "a dead holder's fields are no marks")
	assert.Equal(t, 3, st.Permits)
	assert.Equal(t, 2, st.Available, "a dead holder's permit is free")

	assert.Equal(t, queue, before(fk.Queue), "Inspect wrote nothing")
	assert.Equal(t, holders, before(sk.Hash), "Inspect wrote nothing")
}

// TestInspectEveryKindBadInput: each kind's Inspect on a nil handle, with
// a nil context, an empty name, after Close.
func TestInspectEveryKindBadInput(t *testing.T) {
	c := sharedClient(t)
	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	type inspector interface {
		Inspect(context.Context) (rlock.LockState, error)
	}
	handles := func(c *rlock.Client, name string) map[string]inspector {
		return map[string]inspector{
			"Mutex": c.Mutex(name), "FairMutex": c.FairMutex(name), "RWMutex": c.RWMutex(name),
			"Semaphore": c.Semaphore(name), "CountDownLatch": c.CountDownLatch(name), "GroupedMutex": c.GroupedMutex("g", name),
		}
	}
	nils := map[string]inspector{
		"Mutex": (*rlock.Mutex)(nil), "FairMutex": (*rlock.FairMutex)(nil), "RWMutex": (*rlock.RWMutex)(nil),
		"Semaphore": (*rlock.Semaphore)(nil), "CountDownLatch": (*rlock.CountDownLatch)(nil),
	}
	for kind, h := range nils {
		_, err := h.Inspect(t.Context())
		assert.ErrorIs(t, err, rlock.ErrNilClient, "nil %s", kind)
	}
	for kind, h := range handles(c, "x") {
		//lint:ignore SA1012 a nil context is the bad input under test
		_, err := h.Inspect(nil)
		assert.ErrorIs(t, err, rlock.ErrNilContext, kind)
	}
	for kind, h := range handles(c, "") {
		_, err := h.Inspect(t.Context())
		assert.ErrorIs(t, err, rlock.ErrInvalidName, kind)
	}
	for kind, h := range handles(closed, "x") {
		_, err := h.Inspect(t.Context())
		assert.ErrorIs(t, err, rlock.ErrClosed, kind)
	}
}
