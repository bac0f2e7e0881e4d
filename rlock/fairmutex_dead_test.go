package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// A Client cut off from Redis and closed while one of its owners waits in
// a fair lock's queue is a waiter whose process died, as Redis sees it:
// nothing renews its entry, and nothing takes it out of the queue.
// (integration kills a real one.)

// deadLease is the lease of the Clients whose waiters die.
const deadLease = 1500 * time.Millisecond

// queueDeadWaiter has a Client with lease queue an owner on lock name,
// after those queued already (n of them), and then dies: its link to Redis
// goes (a proxy closes, so nothing it sends later lands) and the Client is
// closed. The waiter's Lock fails, and its entry stays behind: the waiter
// could not take it back.
func queueDeadWaiter(t *testing.T, s redistest.Setup, name string, n int, lease time.Duration) {
	proxy := s.Node.Proxy(t)
	rc, err := rueidis.NewClient(redistest.ClientOption(proxy.Addr()))
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c, err := rlock.New(rc, rlock.WithLeaseTime(lease), rlock.WithRetryTimeout(200*time.Millisecond))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := c.FairMutex(name).Lock(t.Context())
		done <- err
	}()
	waitQueued(t, s.Client(t), name, n+1)
	require.NoError(t, proxy.Close())
	require.NoError(t, c.Close())
	require.Error(t, <-done)
}

// lockAsync starts fm.Lock and returns a channel that receives its lock
// context.
func lockAsync(t *testing.T, fm *rlock.FairMutex) <-chan context.Context {
	got := make(chan context.Context, 1)
	go func() {
		ctx, err := fm.Lock(t.Context())
		assert.NoError(t, err)
		got <- ctx
	}()
	return got
}

// TestFairDeadWaiter queues a dead waiter behind a holder, and a live
// one behind it.
//
//   - Dropped: the dead waiter's entry drops out of the queue within its
//     lease, and the holder's Unlock passes it by.
//   - Granted: the holder unlocks while the dead waiter's entry lives, so
//     it is handed the lock; it holds it only for what is left of its
//     entry's lease, and the live waiter, told that lease, takes it then.
func TestFairDeadWaiter(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	for _, granted := range []bool{false, true} {
		t.Run(map[bool]string{false: "Dropped", true: "Granted"}[granted], func(t *testing.T) {
			t.Parallel()
			name := redistest.LockName(t)
			admin := s.Client(t)
			fm := newRlock(t, s.Client(t)).FairMutex(name)
			held, err := fm.Lock(t.Context())
			require.NoError(t, err)
			queueDeadWaiter(t, s, name, 0, deadLease)
			dead := queued(t, admin, name)[0]
			live := newRlock(t, s.Client(t)).FairMutex(name)
			got := lockAsync(t, live)
			waitQueued(t, admin, name, 2)

			start := time.Now()
			// The bounds are the property. A handoff comes on the Unlock: a
			// live waiter it missed would sleep out the holder's 30 s lease,
			// which 5 s tells apart on a loaded machine too. A grant to the
			// dead waiter ends with its lease, give or take a second.
			limit := 5 * time.Second
			if granted {
				require.NoError(t, fm.Unlock(held))
				owns, err := admin.Do(t.Context(), admin.B().Hexists().Key(fairKeys(name).Hash).Field(dead).Build()).AsBool()
				require.NoError(t, err)
				require.True(t, owns, "the dead waiter, first in line, was handed the lock")
				limit = deadLease + time.Second // its grant lease runs out first
			} else {
				waitQueued(t, admin, name, 1) // the dead waiter's entry drops out
				// The bound is the property: an entry nothing renews goes
				// when its lease ends, give or take a second of a loaded
				// machine.
				assert.Less(t, time.Since(start), deadLease+time.Second, "within its lease")
				start = time.Now()
				require.NoError(t, fm.Unlock(held))
			}
			select {
			case ctx := <-got:
				assert.Less(t, time.Since(start), limit, "the live waiter took the lock")
				token, ok := live.FencingToken(ctx)
				assert.True(t, ok)
				assert.Positive(t, token)
				require.NoError(t, live.Unlock(ctx))
			case <-time.After(limit + 5*time.Second):
				t.Fatal("the live waiter never got the lock")
			}
			assert.Empty(t, queued(t, admin, name))
		})
	}
}

// TestFairRedisRestart: Redis restarts empty under a held lock with a
// queue. The holder learns it lost the lock, and the waiters, woken by
// their resubscription, all get it in turn (asking again when a grant
// came too late to be safe): nothing is stuck.
func TestFairRedisRestart(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	name := redistest.LockName(t)
	const lease = 2 * time.Second
	fm := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)).FairMutex(name)
	held, err := fm.Lock(t.Context())
	require.NoError(t, err)
	const waiters = 5
	results := make(chan error, waiters)
	for i := range waiters {
		w := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease)).FairMutex(name)
		go func() {
			// A Lock whose request Redis answered only after the restart
			// may find its local deadline, counted from the first send,
			// passed already: it fails with ErrLockLost, as a Mutex's does.
			// One whose requests met Redis down for longer than the retry
			// timeout (a loaded machine restarts a container slowly) fails
			// with the transport error. The caller asks again after either.
			var err error
			for range 3 {
				var ctx context.Context
				if ctx, err = w.Lock(t.Context()); err == nil {
					results <- w.Unlock(ctx)
					return
				}
			}
			results <- fmt.Errorf("three Locks in a row failed, the last with: %w", err)
		}()
		waitQueued(t, node.Client(t), name, i+1)
	}
	require.NoError(t, node.Kill(t.Context()))
	require.NoError(t, node.Restart(t.Context()))
	select {
	case <-held.Done():
		assert.ErrorIs(t, context.Cause(held), rlock.ErrLockLost)
	case <-time.After(3 * lease):
		t.Fatal("the holder was not told that the restart lost its lock")
	}
	for range waiters {
		select {
		case err := <-results:
			assert.NoError(t, err)
		case <-time.After(redistest.Patience + 5*lease):
			t.Fatal("a waiter is stuck after the restart")
		}
	}
	assert.Empty(t, queued(t, node.Client(t), name))
}
