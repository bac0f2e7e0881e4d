package rlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// handoffBound is how soon a waiter must hold a lock after its holder's
// Unlock. A waiter that missed the wake-up would sleep until the holder's
// 30 s lease ran out, so any bound well below that tells the two apart; 5 s
// is generous for a loaded 2-core machine under -race. How fast a handoff
// is, BenchmarkHandoff measures.
const handoffBound = 5 * time.Second

// TestWaiting runs the pub/sub waiting suite on every setup.
func TestWaiting(t *testing.T) {
	redistest.ForEachSetup(t, func(t *testing.T, s redistest.Setup) {
		t.Run("Handoff", func(t *testing.T) { testHandoff(t, s) })
		t.Run("ManyWaiters", func(t *testing.T) { testManyWaiters(t, s) })
	})
}

// testHandoff: a waiter in another Client holds the lock within
// handoffBound of the holder's Unlock, while the holder's lease is 30 s.
func testHandoff(t *testing.T, s redistest.Setup) {
	name := redistest.LockName(t)
	raw := s.Client(t)
	holderClient := newRlock(t, s.Client(t))
	holder := holderClient.Mutex(name)
	waiter := newRlock(t, s.Client(t)).Mutex(name)
	for round := range 5 {
		hctx, err := holder.Lock(t.Context())
		require.NoError(t, err)
		acquired, got := lockInBackground(t, waiter)
		waitWaiting(t, raw, lockKeys(name), 1)
		start := time.Now()
		require.NoError(t, holder.Unlock(hctx))
		took := receive(t, acquired, "the waiter's Lock").Sub(start)
		require.NoError(t, <-got)
		t.Logf("round %d: handoff %v", round, took)
		assert.Less(t, took, handoffBound, "round %d: handoff took %v with a 30 s lease", round, took)
		// The next round waits for a subscription of its own.
		redistest.AssertNoSubscribers(t, raw, lockKeys(name))
	}
}

// testManyWaiters: 1 000 waiters on 100 locks, all through one Client and
// so one connection, each get their lock in turn, and never two at once.
func testManyWaiters(t *testing.T, s redistest.Setup) {
	const locks, perLock = 100, 10
	holders := newRlock(t, s.Client(t))
	rec := &hooktest.Recorder{}
	waiters := newRlock(t, s.Client(t), rlock.WithHooks(rec))
	names := make([]string, locks)
	held := make([]context.Context, locks)
	for i := range names {
		names[i] = fmt.Sprintf("%s:%d", redistest.LockName(t), i)
		var err error
		held[i], err = holders.Mutex(names[i]).Lock(t.Context())
		require.NoError(t, err)
	}

	inside := make([]atomic.Int32, locks)
	var overlaps, acquired atomic.Int32
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range locks * perLock {
		lock := i % locks
		wg.Go(func() {
			mu := waiters.Mutex(names[lock])
			lctx, err := mu.Lock(ctx)
			if !assert.NoError(t, err) {
				return
			}
			if inside[lock].Add(1) > 1 {
				overlaps.Add(1)
			}
			acquired.Add(1)
			inside[lock].Add(-1)
			assert.NoError(t, mu.Unlock(lctx))
		})
	}
	waitWaits(t, rec, locks*perLock) // every waiter found its lock held
	for _, name := range names {
		waitWaiting(t, s.Client(t), lockKeys(name), 1)
	}
	for i, name := range names {
		require.NoError(t, holders.Mutex(name).Unlock(held[i]))
	}
	wg.Wait()
	assert.Equal(t, int32(locks*perLock), acquired.Load(), "every waiter got its lock")
	if s.Cluster != nil {
		masters := map[int]bool{}
		for _, name := range names {
			owner, err := s.Cluster.MasterOf(t.Context(), slot.Of(lockKeys(name).Hash))
			require.NoError(t, err)
			masters[owner] = true
		}
		assert.Len(t, masters, 3, "the locks spread over every master of the Cluster")
	}
	assert.Zero(t, overlaps.Load(), "two holders of one lock at once")
	raw := s.Client(t)
	for _, name := range names {
		redistest.AssertNoSubscribers(t, raw, lockKeys(name))
	}
}

// TestWaitingDoesNotPoll holds a lock against 20 waiters: they make a
// bounded number of acquire attempts when they start, then none for the
// next 1.5 s of the hold, until the holder unlocks. The first waiter tries,
// subscribes and tries again; the others, starting once it waits, know the
// lock is contended and try once, after subscribing.
func TestWaitingDoesNotPoll(t *testing.T) {
	const waiters = 20
	node := redistest.New(t, redistest.Config{})
	raw := node.Client(t)
	name := redistest.LockName(t)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)

	rec := &hooktest.Recorder{}
	c := newRlock(t, node.Client(t), rlock.WithHooks(rec))
	var wg sync.WaitGroup
	before := redistest.ScriptCalls(t, raw)
	attempts := func(n int) {
		redistest.Eventually(t, fmt.Sprintf("%d acquire attempts", n), func(ctx context.Context) error {
			if got := redistest.ScriptCalls(t, raw) - before; got < n {
				return fmt.Errorf("%d acquire attempts", got)
			}
			return nil
		})
	}
	wait := func() {
		wg.Go(func() {
			mu := c.Mutex(name)
			ctx, err := mu.Lock(t.Context())
			if assert.NoError(t, err) {
				assert.NoError(t, mu.Unlock(ctx))
			}
		})
	}
	wait()
	attempts(2)
	redistest.WaitSubscribers(t, raw, lockKeys(name).Channel, 1) // not Inspect: a script, which would count
	for range waiters - 1 {
		wait()
	}
	waitWaits(t, rec, waiters)
	attempts(waiters + 1)
	settled := redistest.ScriptCalls(t, raw)
	time.Sleep(1500 * time.Millisecond) // the thing under test: a long hold, during which nobody polls
	quiet := redistest.ScriptCalls(t, raw)

	t.Logf("%d waiters: %d acquire attempts while starting, %d during the next 1.5 s of the hold", waiters, settled-before, quiet-settled)
	assert.EqualValues(t, waiters+1, settled-before, "attempts while the waiters started: two by the first, one by each other")
	// Each INFO call is not a script; anything here is an acquire attempt.
	assert.Zero(t, quiet-settled, "acquire attempts while the holder held the lock for 1.5 s")
	require.NoError(t, holder.Unlock(hctx))
	wg.Wait()
	redistest.AssertNoSubscribers(t, raw, lockKeys(name))
}

// TestWaitingSurvivesLostWakeup kills the waiter's subscribed connection
// just before the holder unlocks, so the unlock message is lost: the waiter
// still gets the lock, bounded by the resubscribe (which wakes every waiter
// to re-check), far sooner than the holder's 30 s lease.
func TestWaitingSurvivesLostWakeup(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	if !node.Controllable() {
		t.Skip("the Redis at REDIS_ADDR is shared: the test cannot kill its connections")
	}
	raw := node.Client(t)
	name := redistest.LockName(t)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)

	acquired, got := lockInBackground(t, newRlock(t, node.Client(t)).Mutex(name))
	redistest.WaitSubscribers(t, raw, lockKeys(name).Channel, 1)

	killed := killSubscribers(t, raw)
	require.NotZero(t, killed, "the waiter's subscribed connection was found and killed")
	start := time.Now()
	require.NoError(t, holder.Unlock(hctx))
	at := receive(t, acquired, "the waiter's Lock after a lost wake-up")
	require.NoError(t, <-got)
	t.Logf("acquired %v after the unlock whose message was lost", at.Sub(start))
	// Without the resubscribe's wake-up the waiter would sleep out the 30 s
	// lease: 10 s tells the two apart, even on a loaded machine.
	assert.Less(t, at.Sub(start), 10*time.Second, "the waiter got the lock long before the 30 s lease")
	redistest.AssertNoSubscribers(t, raw, lockKeys(name))
}

// killSubscribers kills every connection that has a channel subscription
// and returns how many it killed.
func killSubscribers(t *testing.T, raw rueidis.Client) int {
	t.Helper()
	list, err := raw.Do(t.Context(), raw.B().ClientList().Build()).ToString()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["sub"] == "0" && fields["ssub"] == "0" {
			continue
		}
		id, err := strconv.ParseInt(fields["id"], 10, 64)
		require.NoError(t, err)
		require.NoError(t, raw.Do(t.Context(), raw.B().ClientKill().Id(id).Build()).Error())
		killed++
	}
	return killed
}

// lockInBackground locks mu on a goroutine of its own, sends when Lock
// returned, unlocks at once, and sends Lock's or Unlock's error.
func lockInBackground(t *testing.T, mu *rlock.Mutex) (<-chan time.Time, <-chan error) {
	acquired := make(chan time.Time, 1)
	got := make(chan error, 1)
	go func() {
		ctx, err := mu.Lock(t.Context())
		acquired <- time.Now()
		if err == nil {
			err = mu.Unlock(ctx)
		}
		got <- err
	}()
	return acquired, got
}
