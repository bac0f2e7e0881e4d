package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/pubsub"
	"github.com/rlock/rlock/rlock"
)

// held is a waiter's Lock that returned: which waiter, and how to unlock.
type held struct {
	i   int
	ctx context.Context
	mu  *rlock.Mutex
}

// lockAndReport locks mu on a goroutine of its own and sends the hold on
// got, for the test to unlock.
func lockAndReport(t *testing.T, i int, mu *rlock.Mutex, ctx context.Context, got chan<- held) {
	go func() {
		lctx, err := mu.Lock(ctx)
		if ctx.Err() != nil || errors.Is(err, rlock.ErrClosed) {
			return // the test gave up on this waiter, or closed its Client
		}
		if assert.NoError(t, err, "waiter %d", i) {
			got <- held{i, lctx, mu}
		}
	}()
}

// waitRecorded waits until n Clients are recorded as waiting on k's lock.
func waitRecorded(t *testing.T, node *redistest.Node, k keys.Keys, n int64) {
	t.Helper()
	raw := node.Client(t)
	redistest.Eventually(t, fmt.Sprintf("%d Clients recorded as waiting", n), func(ctx context.Context) error {
		got, err := raw.Do(ctx, raw.B().Zcard().Key(k.Queue).Build()).AsInt64()
		if err != nil || got != n {
			return fmt.Errorf("%d recorded (%v)", got, err)
		}
		return nil
	})
}

// bystander subscribes to channel on a client of its own, as a process
// would that waits there, and returns stop, which unsubscribes and
// returns the messages heard.
func bystander(t *testing.T, node *redistest.Node, channel string) (stop func() []string) {
	rc := node.Client(t)
	ctx, cancel := context.WithCancel(t.Context())
	var (
		mu    sync.Mutex
		heard []string
		done  = make(chan error, 1)
	)
	go func() {
		done <- rc.Receive(ctx, rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, m.Message)
		})
	}()
	return func() []string {
		cancel()
		<-done
		// Receive ends without unsubscribing.
		require.NoError(t, rc.Do(t.Context(), rc.B().Unsubscribe().Channel(channel).Build()).Error())
		mu.Lock()
		defer mu.Unlock()
		return heard
	}
}

// relayInOrder takes n holds from got, each of them unlocked at once, and
// checks that they come in the order their waiters began to wait.
func relayInOrder(t *testing.T, got <-chan held, n int) {
	t.Helper()
	for i := range n {
		h := receive(t, got, fmt.Sprintf("handoff %d", i))
		assert.Equal(t, i, h.i, "handoff %d goes to the Client waiting longest", i)
		require.NoError(t, h.mu.Unlock(h.ctx))
	}
}

// TestReleaseWakesOneClient: eight waiters in eight Clients, each subscribed
// to the lock's channel. Every release wakes one of them, in the order
// their Clients began to wait, and no other: each handoff costs Redis
// one release and one acquire, where a message to every Client cost a
// refused acquire from each of the others. The wake-ups go to the Clients'
// inboxes: a bystander on the lock's channel hears none of them.
func TestReleaseWakesOneClient(t *testing.T) {
	const waiters = 8
	node := redistest.New(t, redistest.Config{})
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := lockKeys(name)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, holder.Unlock(hctx)) // loads the release script: no NOSCRIPT retry counted below
	hctx, err = holder.Lock(t.Context())
	require.NoError(t, err)

	got := make(chan held, waiters)
	for i := range waiters {
		lockAndReport(t, i, newRlock(t, node.Client(t)).Mutex(name), t.Context(), got)
		waitRecorded(t, node, k, int64(i+1)) // one at a time: the order of waiting is known
	}
	stop := bystander(t, node, k.Channel)
	redistest.WaitSubscribers(t, raw, k.Channel, waiters+1)

	before := redistest.ScriptCalls(t, raw)
	require.NoError(t, holder.Unlock(hctx))
	relayInOrder(t, got, waiters)
	scripts := redistest.ScriptCalls(t, raw) - before
	t.Logf("%d handoffs between %d Clients: %d scripts", waiters, waiters, scripts)
	// The holder's release, then each waiter's acquire and release.
	assert.Equal(t, 1+2*waiters, scripts, "scripts run: nobody but the waiter woken asked for the lock")
	for _, m := range stop() {
		assert.False(t, strings.HasPrefix(m, pubsub.Addressed), "the bystander heard %q, addressed to a Client", m)
	}
	redistest.AssertNoSubscribers(t, raw, k)
	n, err := raw.Do(t.Context(), raw.B().Exists().Key(k.Queue).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "no Client is recorded as waiting once all have the lock")
}

// TestGivenUpClientPassesWakeOn: a Client whose only waiter gives up leaves
// the waiting Clients, and the next Client gets the lock at once on the
// holder's Unlock, not after the holder's 30 s lease (handoffBound). (A
// waiter that gives up after the release addressed its Client passes the
// wake-up on in Redis: lua's TestWithdrawPassesWakeOn.)
func TestGivenUpClientPassesWakeOn(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	name := redistest.LockName(t)
	k := lockKeys(name)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)
	gaveUp, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan held, 2)
	lockAndReport(t, 0, newRlock(t, node.Client(t)).Mutex(name), gaveUp, got)
	waitRecorded(t, node, k, 1)
	lockAndReport(t, 1, newRlock(t, node.Client(t)).Mutex(name), t.Context(), got)
	waitRecorded(t, node, k, 2)

	cancel()
	waitRecorded(t, node, k, 1)
	start := time.Now()
	require.NoError(t, holder.Unlock(hctx))
	h := receive(t, got, "the other Client's waiter")
	took := time.Since(start)
	assert.Equal(t, 1, h.i, "the waiter that did not give up")
	assert.Less(t, took, handoffBound, "handoff %v, with a 30 s lease", took)
	require.NoError(t, h.mu.Unlock(h.ctx))
}

// TestClosedClientCostsALease: a Client closed (or whose process died)
// while recorded as waiting swallows the release's wake-up addressed to
// it; the next Client's waiter still gets the lock when the lease it was
// told of runs out (the waiter's timer), the bound without pub/sub.
func TestClosedClientCostsALease(t *testing.T) {
	const lease = time.Second
	node := redistest.New(t, redistest.Config{})
	name := redistest.LockName(t)
	k := lockKeys(name)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.LockFor(t.Context(), lease)
	require.NoError(t, err)
	closed := newRlock(t, node.Client(t))
	got := make(chan held, 2)
	lockAndReport(t, 0, closed.Mutex(name), t.Context(), got)
	waitRecorded(t, node, k, 1)
	lockAndReport(t, 1, newRlock(t, node.Client(t)).Mutex(name), t.Context(), got)
	waitRecorded(t, node, k, 2)

	require.NoError(t, closed.Close())
	require.NoError(t, holder.Unlock(hctx))
	h := receive(t, got, "the other Client's waiter")
	assert.Equal(t, 1, h.i, "the waiter whose Client is open")
	require.NoError(t, h.mu.Unlock(h.ctx))
}

// TestClientsSharingOneConnection: ten Clients on one rueidis client, as a
// process with one connection to Redis may make them, each with a waiter
// on one lock. While the holder holds, Redis sees nothing from them: no
// SUBSCRIBE and no acquire (each Client's subscription is confirmed on
// its own inbox; confirmed on the shared channel, each Client took the
// others' SUBSCRIBEs for its subscription made again, woke its waiter to
// ask, and resubscribed without end). Then every release hands the lock to
// the Client waiting longest, and nothing stays subscribed.
func TestClientsSharingOneConnection(t *testing.T) {
	const waiters = 10
	node := redistest.New(t, redistest.Config{})
	shared, raw := node.Client(t), node.Client(t)
	name := redistest.LockName(t)
	k := lockKeys(name)
	holder := newRlock(t, node.Client(t)).Mutex(name)
	hctx, err := holder.LockFor(t.Context(), time.Minute) // no watchdog renewal in the quiet second
	require.NoError(t, err)

	got := make(chan held, waiters)
	for i := range waiters {
		lockAndReport(t, i, newRlock(t, shared).Mutex(name), t.Context(), got)
		waitRecorded(t, node, k, int64(i+1))
	}
	time.Sleep(200 * time.Millisecond) // what the last waiter set off, if anything
	before := redistest.ReadStats(t, raw)
	time.Sleep(time.Second)
	after := redistest.ReadStats(t, raw)
	assert.Equal(t, before.Calls["subscribe"], after.Calls["subscribe"], "SUBSCRIBEs while the holder held")
	assert.Equal(t, before.Scripts(), after.Scripts(), "scripts while the holder held")

	require.NoError(t, holder.Unlock(hctx))
	relayInOrder(t, got, waiters)
	redistest.AssertNoSubscribers(t, raw, k)
}
