package rlock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestDo runs the Do suite on every Redis backend the harness offers.
func TestDo(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"RunsInOrder":          testDoRunsInOrder,
		"FailingCommandAlone":  testDoFailingCommandAlone,
		"NotHeld":              testDoNotHeld,
		"LostInRedis":          testDoLostInRedis,
		"PausedHolder":         testDoPausedHolder,
		"Reentrant":            testDoReentrant,
		"SharedOwner":          testDoSharedOwner,
		"BadInput":             testDoBadInput,
		"Slots":                testDoSlots,
		"FairMutex":            testDoFairMutex,
		"RWMutex":              testDoRWMutex,
		"Hooks":                testDoHooks,
		"InspectSeesTheHolder": testDoInspect,
		"LargestCommand":       testDoLargestCommand,
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

// get reads key, "" when it is missing.
func get(t *testing.T, rc rueidis.Client, key string) string {
	t.Helper()
	v, err := rc.Do(t.Context(), rc.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	require.NoError(t, err)
	return v
}

func testDoRunsInOrder(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	mu := newRlock(t, rc).Mutex(redistest.LockName(t))
	key := mu.Key("balance")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)

	b := rc.B()
	res, err := mu.Do(ctx,
		b.Set().Key(key).Value("10").Build(),
		b.Incrby().Key(key).Increment(5).Build(),
		b.Get().Key(key).Build(),
		b.Get().Key(mu.Key("missing")).Build(),
	)
	require.NoError(t, err)
	require.Len(t, res, 4, "one result per command")
	ok, err := res[0].ToString()
	require.NoError(t, err)
	assert.Equal(t, "OK", ok)
	n, err := res[1].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(15), n, "the commands ran in order")
	v, err := res[2].ToString()
	require.NoError(t, err)
	assert.Equal(t, "15", v)
	assert.True(t, rueidis.IsRedisNil(res[3].Error()), "a missing key reads as nil: %v", res[3])
	assert.Equal(t, "15", get(t, rc, key))

	held, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, held, "Do leaves the hold as it was")
	token, ok2 := mu.FencingToken(ctx)
	assert.True(t, ok2)
	assert.Positive(t, token)
}

func testDoFailingCommandAlone(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	mu := newRlock(t, rc).Mutex(redistest.LockName(t))
	str, list := mu.Key("str"), mu.Key("list")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)

	b := rc.B()
	res, err := mu.Do(ctx,
		b.Set().Key(str).Value("x").Build(),
		b.Lpush().Key(str).Element("y").Build(), // WRONGTYPE
		b.Rpush().Key(list).Element("z").Build(),
	)
	require.NoError(t, err, "a failing command fails alone, as in MULTI/EXEC")
	require.Len(t, res, 3)
	assert.NoError(t, res[0].Error())
	re, ok := rueidis.IsRedisErr(res[1].Error())
	require.True(t, ok, "the failing command's result is its Redis error: %v", res[1])
	assert.True(t, strings.HasPrefix(re.Error(), "WRONGTYPE"), "the error is Redis's own: %v", re)
	n, err := res[2].AsInt64()
	require.NoError(t, err, "the command after it still ran")
	assert.Equal(t, int64(1), n)
	assert.Equal(t, "x", get(t, rc, str))
}

func testDoNotHeld(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	c := newRlock(t, rc)
	mu := c.Mutex(redistest.LockName(t))
	key := mu.Key("v")
	set := func() rueidis.Completed { return rc.B().Set().Key(key).Value("stray").Build() }

	_, err := mu.Do(t.Context(), set())
	assert.ErrorIs(t, err, rlock.ErrNotHeld, "a context that never held the lock")

	other := c.Mutex(redistest.LockName(t) + "-other")
	octx, err := other.Lock(t.Context())
	require.NoError(t, err)
	defer other.Unlock(octx)
	_, err = mu.Do(octx, set())
	assert.ErrorIs(t, err, rlock.ErrNotHeld, "a context that holds another lock")

	// Another owner holds it: a context of this owner cannot write.
	hctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	_, err = mu.Do(octx, set())
	assert.ErrorIs(t, err, rlock.ErrNotHeld, "while another owner holds it")

	require.NoError(t, mu.Unlock(hctx))
	_, err = mu.Do(hctx, set())
	assert.ErrorIs(t, err, rlock.ErrNotHeld, "after the final Unlock")
	assert.ErrorIs(t, err, context.Canceled, "the lock context is done: nothing is sent")
	assert.Empty(t, get(t, rc, key), "no Do wrote")
}

// testDoLostInRedis: a holder whose lock was deleted in Redis, and taken by
// another owner, has a lock context that does not know it yet (it learns
// at the next renewal); its Do reaches Redis, which refuses it, and the
// other owner's value stays.
func testDoLostInRedis(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	name := redistest.LockName(t)
	a, b := newRlock(t, rc).Mutex(name), newRlock(t, rc).Mutex(name)
	key := a.Key("v")

	actx, err := a.Lock(t.Context())
	require.NoError(t, err)
	forced, err := b.ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, forced)
	bctx, err := b.Lock(t.Context())
	require.NoError(t, err)
	defer b.Unlock(bctx)
	_, err = b.Do(bctx, rc.B().Set().Key(key).Value("b").Build())
	require.NoError(t, err)

	require.NoError(t, actx.Err(), "the first holder has not learnt of the loss")
	_, err = a.Do(actx, rc.B().Set().Key(key).Value("a").Build())
	assert.ErrorIs(t, err, rlock.ErrLockLost, "Redis refuses the lost holder's Do")
	assert.Equal(t, "b", get(t, rc, key), "and keeps the new holder's value")
	assert.ErrorIs(t, context.Cause(actx), rlock.ErrLockLost, "the refused holder's context ends")
	assert.ErrorIs(t, a.Unlock(actx), rlock.ErrNotHeld)
}

// testDoPausedHolder is Kleppmann's scenario: a holder with a fixed lease
// pauses past it, another owner takes the lock and writes; the first
// holder's Do, when it wakes, fails and leaves the second's value.
func testDoPausedHolder(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	name := redistest.LockName(t)
	a, b := newRlock(t, rc).Mutex(name), newRlock(t, rc).Mutex(name)
	key := a.Key("v")
	const lease = 200 * time.Millisecond

	actx, err := a.LockFor(t.Context(), lease)
	require.NoError(t, err)
	bctx, err := b.Lock(t.Context()) // waits until the lease ran out: "the pause"
	require.NoError(t, err)
	defer b.Unlock(bctx)
	_, err = b.Do(bctx, rc.B().Set().Key(key).Value("b").Build())
	require.NoError(t, err)

	_, err = a.Do(actx, rc.B().Set().Key(key).Value("a").Build())
	assert.ErrorIs(t, err, rlock.ErrLockLost, "the paused holder's Do fails")
	assert.Equal(t, "b", get(t, rc, key), "and leaves the second holder's value")
}

func testDoReentrant(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	mu := newRlock(t, rc).Mutex(redistest.LockName(t))
	key := mu.Key("n")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	inner, err := mu.Lock(ctx)
	require.NoError(t, err)
	_, err = mu.Do(inner, rc.B().Incr().Key(key).Build())
	require.NoError(t, err, "a re-entrant holder may call Do")
	require.NoError(t, mu.Unlock(inner))
	_, err = mu.Do(ctx, rc.B().Incr().Key(key).Build())
	require.NoError(t, err, "and so may the outer level after the inner one left")
	require.NoError(t, mu.Unlock(ctx))
	assert.Equal(t, "2", get(t, rc, key))
}

// testDoSharedOwner: goroutines sharing a lock context take turns; every
// Do runs once.
func testDoSharedOwner(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	mu := newRlock(t, rc).Mutex(redistest.LockName(t))
	key := mu.Key("n")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)
	const goroutines, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for range goroutines {
		wg.Go(func() {
			for range each {
				_, err := mu.Do(ctx, rc.B().Incr().Key(key).Build())
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, "160", get(t, rc, key), "every Do ran once")
}

// testDoBadInput: every bad input is a clear error, and nothing is sent.
func testDoBadInput(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	name := redistest.LockName(t)
	mu := newRlock(t, rc).Mutex(name)
	key := mu.Key("v")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)
	b := rc.B()
	k := lockKeys(name)

	bad := map[string][]rueidis.Completed{
		"no commands":       nil,
		"empty command":     {{}},
		"blocking":          {b.Set().Key(key).Value("x").Build(), b.Blpop().Key(key).Timeout(1).Build()},
		"MULTI":             {b.Multi().Build()},
		"EXEC":              {b.Exec().Build()},
		"WATCH":             {b.Watch().Key(key).Build()},
		"SUBSCRIBE":         {b.Subscribe().Channel(key).Build()},
		"EVAL":              {b.Eval().Script("return 1").Numkeys(1).Key(key).Build()},
		"WAIT":              {b.Wait().Numreplicas(1).Timeout(1).Build()},
		"the lock's hash":   {b.Del().Key(k.Hash).Build()},
		"the token counter": {b.Set().Key(k.Token).Value("1").Build()},
		"too many words":    {b.Arbitrary("MSET").Keys(key).Args(make([]string, 8000)...).Build()},
	}
	for what, cmds := range bad {
		_, err := mu.Do(ctx, cmds...)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, what)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = mu.Do(nil, b.Set().Key(key).Value("x").Build())
	assert.ErrorIs(t, err, rlock.ErrNilContext)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = mu.Do(done, b.Set().Key(key).Value("x").Build())
	assert.ErrorIs(t, err, context.Canceled)
	var nilMu *rlock.Mutex
	_, err = nilMu.Do(ctx, b.Set().Key(key).Value("x").Build())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	assert.Empty(t, nilMu.Key("x"))

	assert.Empty(t, get(t, rc, key), "no bad Do wrote")
	_, err = mu.Do(ctx, b.Get().Key(key).Build())
	assert.NoError(t, err, "the lock is intact")
}

// testDoSlots: Key is in the lock's slot and none of its keys; on a
// Cluster a command in another slot, or naming no key, is refused before
// anything is sent.
func testDoSlots(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	name := redistest.LockName(t)
	mu := newRlock(t, rc).Mutex(name)
	k := lockKeys(name)
	key := mu.Key("v")
	assert.Equal(t, slot.Of(k.Hash), slot.Of(key), "Key is in the lock's slot")
	for _, own := range []string{k.Hash, k.Channel, k.Token, k.Fence, k.Queue} {
		assert.NotEqual(t, own, key)
	}
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)

	elsewhere := "elsewhere"
	for slot.Of(elsewhere) == slot.Of(key) {
		elsewhere += "!"
	}
	_, err = mu.Do(ctx, rc.B().Set().Key(key).Value("x").Build(), rc.B().Set().Key(elsewhere).Value("x").Build())
	_, errKeyless := mu.Do(ctx, rc.B().Set().Key(key).Value("y").Build(), rc.B().Arbitrary("SET").Args(key, "z").Build())
	if s.Cluster == nil {
		assert.NoError(t, err, "a single node runs keys of any slot")
		assert.NoError(t, errKeyless, "and commands that name no key")
		assert.Equal(t, "z", get(t, rc, key))
		return
	}
	assert.ErrorIs(t, err, rlock.ErrInvalidArgument, "a key in another slot")
	assert.ErrorIs(t, errKeyless, rlock.ErrInvalidArgument, "a command that names no key")
	assert.Empty(t, get(t, rc, key), "nothing was sent")
}

func testDoFairMutex(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	name := redistest.LockName(t)
	f, other := newRlock(t, rc).FairMutex(name), newRlock(t, rc).FairMutex(name)
	key := f.Key("v")
	_, err := f.Do(t.Context(), rc.B().Set().Key(key).Value("x").Build())
	assert.ErrorIs(t, err, rlock.ErrNotHeld)
	ctx, err := f.Lock(t.Context())
	require.NoError(t, err)
	_, err = f.Do(ctx, rc.B().Set().Key(key).Value("f").Build())
	require.NoError(t, err)
	forced, err := other.ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, forced)
	_, err = f.Do(ctx, rc.B().Set().Key(key).Value("late").Build())
	assert.ErrorIs(t, err, rlock.ErrLockLost)
	assert.Equal(t, "f", get(t, rc, key))
}

// testDoRWMutex: the write holder runs any command; a reader only
// read-only ones, refused before sending otherwise.
func testDoRWMutex(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	rw := newRlock(t, rc).RWMutex(redistest.LockName(t))
	key := rw.Key("v")
	set := func(v string) rueidis.Completed { return rc.B().Set().Key(key).Value(v).Build() }

	_, err := rw.Do(t.Context(), set("none"))
	assert.ErrorIs(t, err, rlock.ErrNotHeld)

	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	_, err = rw.Do(wctx, set("w"))
	require.NoError(t, err, "the writer writes")
	rctx, err := rw.RLock(wctx)
	require.NoError(t, err, "the writer reads too")
	require.NoError(t, rw.Unlock(wctx)) // a downgrade: rctx reads on

	_, err = rw.Do(rctx, set("r"))
	assert.ErrorIs(t, err, rlock.ErrInvalidArgument, "a reader may not write")
	res, err := rw.Do(rctx, rc.B().Get().Key(key).Build())
	require.NoError(t, err, "a reader reads")
	v, err := res[0].ToString()
	require.NoError(t, err)
	assert.Equal(t, "w", v)
	require.NoError(t, rw.RUnlock(rctx))
	assert.Equal(t, "w", get(t, rc, key))
}

// doRecorder is a Recorder that also keeps DoEnd events.
type doRecorder struct {
	hooktest.Recorder
	mu   sync.Mutex
	ends []rlock.DoEnd
}

func (r *doRecorder) DoStart(ctx context.Context, _ rlock.LockRef) context.Context { return ctx }

func (r *doRecorder) DoEnd(_ context.Context, e rlock.DoEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, e)
}

var _ rlock.DoHooks = (*doRecorder)(nil)

func testDoHooks(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	rec := &doRecorder{}
	name := redistest.LockName(t)
	mu := newRlock(t, rc, rlock.WithHooks(rec)).Mutex(name)
	key := mu.Key("v")
	_, err := mu.Do(t.Context(), rc.B().Set().Key(key).Value("x").Build())
	require.ErrorIs(t, err, rlock.ErrNotHeld)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	_, err = mu.Do(ctx, rc.B().Set().Key(key).Value("x").Build(), rc.B().Get().Key(key).Build())
	require.NoError(t, err)
	_, err = newRlock(t, rc).Mutex(name).ForceUnlock(t.Context())
	require.NoError(t, err)
	_, err = mu.Do(ctx, rc.B().Set().Key(key).Value("y").Build())
	require.ErrorIs(t, err, rlock.ErrLockLost)

	token, _ := mu.FencingToken(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.ends, 2, "a Do with no owner is refused before it sends, and not reported")
	assert.Equal(t, rlock.OutcomeRan, rec.ends[0].Outcome)
	assert.Equal(t, 2, rec.ends[0].Commands)
	assert.Equal(t, rlock.LockRef{Kind: "mutex", Name: name}, rec.ends[0].LockRef)
	assert.Equal(t, rlock.OutcomeLost, rec.ends[1].Outcome)
	assert.ErrorIs(t, rec.ends[1].Err, rlock.ErrLockLost)
	assert.Zero(t, token, "the hold ended")
	rec.Balanced(t)
}

// testDoInspect: Inspect shows the holder that Do ran for, as before.
func testDoInspect(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	name := redistest.LockName(t)
	c := newRlock(t, rc)
	mu := c.Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)
	_, err = mu.Do(ctx, rc.B().Set().Key(mu.Key("v")).Value("x").Build())
	require.NoError(t, err)
	st, err := mu.Inspect(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Holders, 1, "%+v", st)
	assert.Equal(t, 1, st.Holders[0].Count)
}

// testDoLargestCommand: a command of 7900 words, the most Do takes, runs.
func testDoLargestCommand(t *testing.T, s redistest.Setup) {
	rc := s.Client(t)
	mu := newRlock(t, rc).Mutex(redistest.LockName(t))
	key := mu.Key("list")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)
	elems := make([]string, 7900-2)
	for i := range elems {
		elems[i] = "e"
	}
	res, err := mu.Do(ctx, rc.B().Rpush().Key(key).Element(elems...).Build())
	require.NoError(t, err)
	n, err := res[0].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(len(elems)), n)
}
