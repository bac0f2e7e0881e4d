package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// The four hostile tests of issue 12, written as a user would with the
// public API only: each drives one way a request could be resent, given up
// or re-entered wrongly, and checks the outcome in Redis and in the lock
// contexts.

// ownerFields returns the fields of the lock hash at key that name an owner
// (with their hold counts), leaving out the bookkeeping the scripts keep
// beside an owner: its request sequence (<owner>#seq) and the waiters mark.
func ownerFields(t *testing.T, rc rueidis.Client, key string) map[string]string {
	t.Helper()
	all, err := rc.Do(t.Context(), rc.B().Hgetall().Key(key).Build()).AsStrMap()
	require.NoError(t, err, "HGETALL %s", key)
	owners := map[string]string{}
	for field, value := range all {
		if field == "waiters" || strings.HasSuffix(field, "#seq") {
			continue
		}
		owners[field] = value
	}
	return owners
}

// exists reports whether key exists on rc's server.
func exists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err, "EXISTS %s", key)
	return n == 1
}

// TestHostileCancelStormWhileDialing: 200 goroutines on three Clients call
// Lock five times each, with contexts that expire 0–5 ms later, against a
// holder on another Client that locks and unlocks in a loop. Each Client is
// on a rueidis client made just before the storm, so that connections are
// dialed during it (rueidis dials all but the first on first use). A call
// that failed must leave nothing behind, the late original of a given-up
// request included: once every caller has returned (the successful ones
// having unlocked) and the holder has stopped, no owner field is left, the
// hash is gone and stays gone, and a fresh TryLock(wait 0) takes the lock at
// once. Ten rounds, each on fresh Clients.
func TestHostileCancelStormWhileDialing(t *testing.T) {
	const (
		rounds   = 10
		callers  = 200 // goroutines, each making attempts Lock calls
		attempts = 5
		clients  = 3
	)
	node := redistest.Shared(t)
	raw := node.Client(t)
	probe := sharedClient(t)

	for round := range rounds {
		t.Run(fmt.Sprintf("Round%d", round), func(t *testing.T) {
			name := redistest.LockName(t)
			hash := lockKeys(name).Hash
			var inside, overlaps atomic.Int32
			enter := func() {
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
			}

			// The holder runs before and during the storm. Its Lock waits
			// as long as it must: a lock that an abandoned request took
			// would hold it up for the 30 s lease, so the end of the storm
			// cancels it rather than letting it wait that out.
			setup := redistest.Setup{Node: node}
			holderClient := newDrainable(t, setup)
			holder := holderClient.Mutex(name)
			holderCtx, stopHolder := context.WithCancel(t.Context())
			defer stopHolder()
			holderDone := make(chan struct{})
			var holds atomic.Int32
			go func() {
				defer close(holderDone)
				for {
					lctx, err := holder.Lock(holderCtx)
					if err != nil {
						if holderCtx.Err() != nil {
							assert.ErrorIs(t, err, context.Canceled, "the holder's Lock, stopped")
						} else {
							assert.NoError(t, err, "the holder's Lock")
						}
						return
					}
					enter()
					holds.Add(1)
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // a hold of its own length, for the storm to meet
					inside.Add(-1)
					if !assert.NoError(t, holder.Unlock(lctx), "the holder's Unlock") {
						return
					}
				}
			}()

			// Fresh rueidis clients, made now: rueidis dials its first
			// connection in NewClient and the others (the second pipelined
			// one, the subscriber's) on first use, during the storm.
			stormers := []drainable{holderClient}
			mutexes := make([]*rlock.Mutex, clients)
			for i := range mutexes {
				c := newDrainable(t, setup)
				stormers = append(stormers, c)
				mutexes[i] = c.Mutex(name)
			}
			var failed, succeeded atomic.Int32
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range callers {
				mu := mutexes[i%clients]
				wg.Go(func() {
					<-start
					for range attempts {
						ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(5001))*time.Microsecond)
						lctx, err := mu.Lock(ctx)
						cancel()
						if err != nil {
							failed.Add(1)
							assert.ErrorIs(t, err, context.DeadlineExceeded, "a failed Lock reports its context")
							continue
						}
						succeeded.Add(1)
						enter()
						inside.Add(-1)
						assert.NoError(t, mu.Unlock(lctx), "a successful caller unlocks")
					}
				})
			}
			close(start)
			wg.Wait()
			stopHolder()
			<-holderDone

			t.Logf("%d Lock calls took the lock, %d gave up; the holder took it %d times", succeeded.Load(), failed.Load(), holds.Load())
			require.NotZero(t, failed.Load(), "the storm gave up some calls")
			assert.Zero(t, overlaps.Load(), "two owners inside at once")

			// Everyone has returned and unlocked: no owner may be left. A
			// given-up request still queued on a connection may arrive
			// late; look again once every one has.
			assert.Empty(t, ownerFields(t, raw, hash), "owner fields left in %s after every caller returned and unlocked", hash)
			assert.False(t, exists(t, raw, hash), "the lock hash is gone")
			drain(t, stormers...)
			assert.Empty(t, ownerFields(t, raw, hash), "owner fields in %s once every request landed: a late request took effect", hash)
			assert.False(t, exists(t, raw, hash), "the lock hash stays gone")

			fresh := probe.Mutex(name)
			lctx, ok, err := fresh.TryLock(t.Context(), 0, 0)
			require.NoError(t, err)
			require.True(t, ok, "a fresh TryLock(wait 0) takes the lock at once")
			require.NoError(t, fresh.Unlock(lctx))
		})
	}
}

// TestHostileRedLockSlowNodes: about sixty owners contend for a RedLock on
// three masters with a 500 ms watchdog lease while two of the masters are
// slowed, in turns, past the node timeout, so that node acquires time out
// and arrive late. Every owner must be alone while it holds the lock, and
// after the last Unlock nothing may be left: no master holds the key, no
// lock context is live, and no watchdog renews anything.
func TestHostileRedLockSlowNodes(t *testing.T) {
	const (
		lease      = 500 * time.Millisecond
		perMaster  = 4  // rlock Clients per master
		contenders = 60 // owners, spread over the Clients
	)
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	hash := lockKeys(name).Hash

	// Masters 0 and 1 are reached through proxies that the test slows;
	// master 2 directly.
	proxies := []*redistest.Proxy{ms.nodes[0].Proxy(t), ms.nodes[1].Proxy(t)}
	redlocks := make([]*rlock.MultiLock, perMaster)
	var clients []drainable
	var recs []*hooktest.Recorder // one per Client, whose watchdog it watches
	for j := range redlocks {
		mutexes := make([]*rlock.Mutex, len(ms.nodes))
		for i, node := range ms.nodes {
			rc := node.Client(t)
			if i < len(proxies) {
				var err error
				rc, err = rueidis.NewClient(redistest.ClientOption(proxies[i].Addr()))
				require.NoError(t, err)
				t.Cleanup(rc.Close)
			}
			rec := &hooktest.Recorder{}
			c := drainable{newRlock(t, rc, rlock.WithLeaseTime(lease), rlock.WithHooks(rec)), rc}
			clients, recs = append(clients, c), append(recs, rec)
			mutexes[i] = c.Mutex(name)
		}
		redlocks[j] = rlock.NewRedLock(mutexes...)
	}

	// The node timeout is 50 ms (a tenth of the lease, at least 50 ms). In
	// turns, one proxied master is slowed to 100 ms each way, so that its
	// acquires time out and reach Redis late, and then both are fast again:
	// a request sent after the switch, on another connection, overtakes one
	// still held back, as a give-back can overtake the acquire it undoes.
	// One master at a time is slow, so a quorum stays reachable.
	stopSlowing := make(chan struct{})
	slowingDone := make(chan struct{})
	go func() {
		defer close(slowingDone)
		defer func() {
			for _, p := range proxies {
				p.Delay(0)
			}
		}()
		timer := time.NewTimer(0)
		defer timer.Stop()
		for phase := 0; ; phase++ {
			select {
			case <-stopSlowing:
				return
			case <-timer.C:
			}
			slow := proxies[(phase/2)%len(proxies)]
			if phase%2 == 0 {
				slow.Delay(100 * time.Millisecond)
				timer.Reset(120 * time.Millisecond)
			} else {
				slow.Delay(0)
				timer.Reset(60 * time.Millisecond)
			}
		}
	}()

	var (
		mu       sync.Mutex
		holders  []context.Context // the lock contexts held now
		overlaps []string
		lctxs    []context.Context // every lock context handed out
	)
	var taken atomic.Int32
	var wg sync.WaitGroup
	for i := range contenders {
		rl := redlocks[i%perMaster]
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			lctx, err := rl.Lock(ctx)
			if !assert.NoError(t, err, "contender %d Lock", i) {
				return
			}
			taken.Add(1)
			mu.Lock()
			for _, other := range holders {
				if other.Err() == nil {
					overlaps = append(overlaps, fmt.Sprintf("contender %d took the lock while another holder's context was live", i))
				}
			}
			holders = append(holders, lctx)
			lctxs = append(lctxs, lctx)
			mu.Unlock()

			time.Sleep(time.Millisecond) // a hold long enough for a rival to meet it

			mu.Lock()
			for k, h := range holders {
				if h == lctx {
					holders = append(holders[:k], holders[k+1:]...)
					break
				}
			}
			mu.Unlock()
			assert.NoError(t, rl.Unlock(lctx), "contender %d Unlock", i)
		})
	}
	wg.Wait()
	close(stopSlowing)
	<-slowingDone

	assert.Empty(t, overlaps, "two RedLock holders at once")
	assert.EqualValues(t, contenders, taken.Load(), "every contender took the lock")
	for i, lctx := range lctxs {
		assert.Error(t, lctx.Err(), "lock context %d is live after its final Unlock", i)
	}

	// A late node acquire that took effect shows as a key: now, while
	// requests held back by the proxies may still be on their way, and once
	// every one has landed. Nothing renews after the last Unlock: a
	// Client's watchdog may report the one round that was out when the
	// Unlocks ended, and no more.
	for i, rc := range ms.raw {
		assert.False(t, exists(t, rc, hash), "master %d holds the key after every Unlock", i)
	}
	before := make([]int, len(recs))
	for i, rec := range recs {
		before[i] = len(rec.Snapshot().Rounds)
	}
	time.Sleep(2 * lease) // the thing under test: six renewal periods pass with nothing to renew
	for i, rec := range recs {
		rounds := rec.Snapshot().Rounds[before[i]:]
		assert.LessOrEqual(t, len(rounds), 1, "Client %d's watchdog renews after every Unlock: %+v", i, rounds)
	}
	drain(t, clients...)
	for i, rc := range ms.raw {
		assert.False(t, exists(t, rc, hash), "master %d holds the key once every request landed", i)
	}
}

// TestHostileConcurrentReentriesMixedLeases: two goroutines sharing one lock
// context re-enter it at the same time, one with a long lease (the
// watchdog's, or 10 s) and one with 40 ms, hold for 100 ms, and unlock; then
// the final Unlock. A rival Client polls TryLock(wait 0) all along: whenever
// it gets the lock, the holder's context must already be done, or its final
// Unlock under way. Leases only lengthen, whatever order the re-entries run
// in: the context is still live after the 100 ms, and the key lasts as long
// as it. 25 trials for each mix, on a hold first taken with a 10 s lease (not
// yet renewed by the watchdog when the re-entries run) or with the
// watchdog's.
func TestHostileConcurrentReentriesMixedLeases(t *testing.T) {
	const (
		trials = 25
		short  = 40 * time.Millisecond
		hold   = 100 * time.Millisecond
	)
	type locker func(mu *rlock.Mutex, ctx context.Context) (context.Context, error)
	lock := func(mu *rlock.Mutex, ctx context.Context) (context.Context, error) { return mu.Lock(ctx) }
	lockFor := func(lease time.Duration) locker {
		return func(mu *rlock.Mutex, ctx context.Context) (context.Context, error) { return mu.LockFor(ctx, lease) }
	}
	// base takes the hold; long and short re-enter it at the same time.
	// A hold with a fixed lease is not yet renewed by the watchdog when the
	// re-entries run, so neither re-entry can lean on it.
	variants := []struct {
		name              string
		base, long, short locker
	}{
		{"LockFor10s/Lock+LockFor40ms", lockFor(10 * time.Second), lock, lockFor(short)},
		{"LockFor10s/LockFor10s+LockFor40ms", lockFor(10 * time.Second), lockFor(10 * time.Second), lockFor(short)},
		{"Lock/Lock+LockFor40ms", lock, lock, lockFor(short)},
	}
	holderClient, rivalClient := sharedClient(t), sharedClient(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			var violations []string
			for trial := range trials {
				name := fmt.Sprintf("%s:%d", redistest.LockName(t), trial)
				mu, rival := holderClient.Mutex(name), rivalClient.Mutex(name)

				base, err := v.base(mu, t.Context())
				require.NoError(t, err, "trial %d: the first Lock", trial)

				began := time.Now()
				var releasing atomic.Bool // the final Unlock has begun
				rivalStop := make(chan struct{})
				rivalGot := make(chan struct{}, 1) // gets a value when the rival took the lock
				go func() {
					defer close(rivalGot)
					for {
						select {
						case <-rivalStop:
							return
						default:
						}
						rctx, ok, err := rival.TryLock(t.Context(), 0, 0)
						if !assert.NoError(t, err, "the rival's TryLock") {
							return
						}
						if ok {
							if base.Err() == nil && !releasing.Load() {
								violations = append(violations, fmt.Sprintf("trial %d: the rival took the lock %v into the trial while the holder's context was live", trial, time.Since(began).Round(time.Millisecond)))
							}
							// Unlock before telling: an assertion must not outlive the test.
							assert.NoError(t, rival.Unlock(rctx), "the rival's Unlock")
							rivalGot <- struct{}{}
							return
						}
						time.Sleep(time.Millisecond) // the rival's polling pace
					}
				}()

				start := make(chan struct{})
				var wg sync.WaitGroup
				for _, reenter := range []func() (context.Context, error){
					func() (context.Context, error) { return v.long(mu, base) },
					func() (context.Context, error) { return v.short(mu, base) },
				} {
					wg.Go(func() {
						<-start
						lctx, err := reenter()
						if !assert.NoError(t, err, "trial %d: a re-entry", trial) {
							return
						}
						time.Sleep(hold) // the thing under test: the short lease passes during the hold
						assert.NoError(t, lctx.Err(), "trial %d: the context is live after %v (cause %v)", trial, hold, context.Cause(lctx))
						assert.NoError(t, mu.Unlock(lctx), "trial %d: unlocking a re-entry", trial)
					})
				}
				close(start)
				wg.Wait()
				releasing.Store(true)
				assert.NoError(t, mu.Unlock(base), "trial %d: the final Unlock", trial)

				// The lock is free now: the rival gets it soon.
				select {
				case _, ok := <-rivalGot:
					assert.True(t, ok, "trial %d: the rival stopped without the lock", trial)
				case <-time.After(redistest.Patience):
					t.Errorf("trial %d: the rival did not get the freed lock in %v", trial, redistest.Patience)
					close(rivalStop)
					<-rivalGot
				}
				if t.Failed() {
					break
				}
			}
			assert.Empty(t, violations, "the rival got the lock while a context carrying the hold was live")
		})
	}
}

// TestHostileReentryRacesFinalUnlock: while one goroutine makes the final
// Unlock of a hold, two others sharing its context re-enter. A re-entry
// either fails (the hold ended first) or returns a live context that holds
// a level: its Unlock works, or says ErrNotHeld only after a loss. At the
// end of every trial the lock is free.
func TestHostileReentryRacesFinalUnlock(t *testing.T) {
	const (
		trials     = 300
		reentrants = 2
	)
	c := sharedClient(t)
	raw := redistest.Shared(t).Client(t)
	var reentered, refused atomic.Int32
	for trial := range trials {
		name := fmt.Sprintf("%s:%d", redistest.LockName(t), trial)
		mu := c.Mutex(name)
		base, err := mu.Lock(t.Context())
		require.NoError(t, err)

		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			assert.NoError(t, mu.Unlock(base), "trial %d: the final Unlock", trial)
		})
		for range reentrants {
			wg.Go(func() {
				<-start
				lctx, err := mu.Lock(base)
				if err != nil {
					refused.Add(1)
					assert.ErrorIs(t, err, context.Canceled, "trial %d: a re-entry after the final Unlock fails with the ended context", trial)
					return
				}
				if !assert.NoError(t, lctx.Err(), "trial %d: Lock succeeded with a done context (cause %v)", trial, context.Cause(lctx)) {
					// Still release what it may hold.
					_ = mu.Unlock(lctx)
					return
				}
				reentered.Add(1)
				err = mu.Unlock(lctx)
				if errors.Is(err, rlock.ErrNotHeld) {
					assert.ErrorIs(t, context.Cause(lctx), rlock.ErrLockLost, "trial %d: ErrNotHeld from the Unlock of a re-entry that was not lost", trial)
					return
				}
				assert.NoError(t, err, "trial %d: unlocking a re-entry", trial)
			})
		}
		close(start)
		wg.Wait()
		assert.False(t, exists(t, raw, lockKeys(name).Hash), "trial %d: the lock is held after every Unlock", trial)
		if t.Failed() {
			t.Logf("stopped after trial %d", trial)
			break
		}
	}
	t.Logf("%d re-entries succeeded, %d were refused", reentered.Load(), refused.Load())
}

// TestHostileCloseWhileEverythingRuns closes a Client while 40 of its
// goroutines take, re-enter, release and wait for four locks against a
// rival Client: Close returns promptly, every call ends with its own result
// or ErrClosed (never a panic, a hang or another error), every lock
// context of the closed Client is done, and the rival takes every lock
// within a lease, since nothing renews the closed Client's holds.
func TestHostileCloseWhileEverythingRuns(t *testing.T) {
	const lease = time.Second
	c, err := rlock.New(redistest.Shared(t).Client(t), rlock.WithLeaseTime(lease))
	require.NoError(t, err)
	rival := sharedClient(t, rlock.WithLeaseTime(lease))
	names := make([]string, 4)
	for i := range names {
		names[i] = fmt.Sprintf("%s:%d", redistest.LockName(t), i)
	}

	// allowed reports whether err may end a call while Close runs.
	allowed := func(err error) bool {
		return err == nil || errors.Is(err, rlock.ErrClosed) || errors.Is(err, rlock.ErrNotHeld)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		bad      []error
		contexts []context.Context
	)
	record := func(err error) bool {
		if !allowed(err) {
			mu.Lock()
			bad = append(bad, err)
			mu.Unlock()
		}
		return errors.Is(err, rlock.ErrClosed)
	}
	for i := range 40 {
		wg.Go(func() {
			m := c.Mutex(names[i%len(names)])
			for {
				var fixed time.Duration
				if i%3 == 0 {
					fixed = lease
				}
				lctx, ok, err := m.TryLock(t.Context(), time.Duration(rand.IntN(30))*time.Millisecond, fixed)
				if record(err) {
					return
				}
				if !ok {
					continue
				}
				mu.Lock()
				contexts = append(contexts, lctx)
				mu.Unlock()
				inner, err := m.Lock(lctx) // re-enters
				if record(err) {
					return
				}
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // holds of varied length for Close to meet
				if record(m.Unlock(inner)) || record(m.Unlock(lctx)) {
					return
				}
			}
		})
		if i%8 == 0 {
			wg.Go(func() { // the rival contends too, and stops with the test
				m := rival.Mutex(names[i%len(names)])
				for t.Context().Err() == nil {
					lctx, ok, err := m.TryLock(t.Context(), 10*time.Millisecond, 0)
					if err != nil || !ok {
						continue
					}
					assert.NoError(t, m.Unlock(lctx), "the rival's Unlock")
					if closedNow(c) {
						return
					}
				}
			})
		}
	}

	closeWhileRunning(t, c, &wg, &mu, &bad, &contexts)
	for _, name := range names {
		lctx, ok, err := rival.Mutex(name).TryLock(t.Context(), 2*lease+time.Second, 0)
		require.NoError(t, err)
		require.True(t, ok, "the rival takes %s once the closed Client's lease ran out", name)
		require.NoError(t, rival.Mutex(name).Unlock(lctx))
	}
}

// closedNow reports whether Client c is closed: its calls fail with
// ErrClosed.
func closedNow(c *rlock.Client) bool {
	_, err := c.Mutex("probe").IsLocked(context.Background())
	return errors.Is(err, rlock.ErrClosed)
}

// waitGroup waits for wg, failing t if that takes longer than limit.
func waitGroup(t *testing.T, wg *sync.WaitGroup, limit time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s: still waiting after %v", what, limit)
	}
}

// TestHostileUnlockOfEndedHold: an owner shared by goroutines (an owner
// context that holds another lock) takes a lock, lets it go, and takes it
// again; a stray second Unlock with the first lock context, whose hold
// ended, gets ErrNotHeld and leaves the later hold, its level and its
// context alone. The same after a loss: a Lock that Redis answered afresh
// ended the earlier hold (ForceUnlock by another Client), and an Unlock
// with the earlier hold's context does not release the later one. For
// every kind in forceKinds.
func TestHostileUnlockOfEndedHold(t *testing.T) {
	for kind, open := range forceKinds {
		t.Run(kind, func(t *testing.T) {
			s, name, owner, m := ownedLock(t, open)

			first, err := m.Lock(owner)
			require.NoError(t, err)
			require.NoError(t, m.Unlock(first))
			later, err := m.Lock(owner)
			require.NoError(t, err)
			assert.ErrorIs(t, m.Unlock(first), rlock.ErrNotHeld, "the first hold's context, after its final Unlock")
			requireHeld(t, m, later)

			_, err = open(newRlock(t, s.Client(t)), name).ForceUnlock(t.Context())
			require.NoError(t, err)
			afresh, err := m.Lock(owner)
			require.NoError(t, err, "the owner context carries no hold of this lock: Redis's new hold is bound to it")
			assert.ErrorIs(t, context.Cause(later), rlock.ErrLockLost, "the hold Redis no longer had")
			assert.ErrorIs(t, m.Unlock(later), rlock.ErrNotHeld, "the lost hold's context")
			requireHeld(t, m, afresh)
			require.NoError(t, m.Unlock(afresh))
			locked, err := m.IsLocked(t.Context())
			require.NoError(t, err)
			assert.False(t, locked)
		})
	}
}

// requireHeld checks that lctx's hold of m is live, at one level, in this
// process and in Redis.
func requireHeld(t *testing.T, m hotLock, lctx context.Context) {
	t.Helper()
	require.NoError(t, lctx.Err(), "the hold's context")
	n, err := m.HoldCount(lctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the hold's level")
	locked, err := m.IsLocked(t.Context())
	require.NoError(t, err)
	require.True(t, locked, "the lock in Redis")
}
