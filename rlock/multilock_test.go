package rlock_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// masters are independent Redis nodes, each with a raw client for checks.
type masters struct {
	nodes []*redistest.Node
	raw   []rueidis.Client
}

func startMasters(t *testing.T, n int) masters {
	t.Helper()
	var ms masters
	for range n {
		node := redistest.New(t, redistest.Config{})
		if !node.Controllable() {
			t.Skip("MultiLock tests need independent nodes the test controls; REDIS_ADDR is a single server")
		}
		ms.nodes = append(ms.nodes, node)
		ms.raw = append(ms.raw, node.Client(t))
	}
	return ms
}

// mutexes returns one Mutex per node, each from its own rlock Client.
func (ms masters) mutexes(t *testing.T, name string, opts ...rlock.Option) []*rlock.Mutex {
	t.Helper()
	out := make([]*rlock.Mutex, len(ms.nodes))
	for i, node := range ms.nodes {
		out[i] = newRlock(t, node.Client(t), opts...).Mutex(name)
	}
	return out
}

// held counts the nodes on which lock name exists.
func (ms masters) held(t *testing.T, name string) int {
	t.Helper()
	n := 0
	for i, rc := range ms.raw {
		if ms.nodes[i].Controllable() && rc.Do(t.Context(), rc.B().Ping().Build()).Error() != nil {
			continue // a killed node
		}
		exists, err := rc.Do(t.Context(), rc.B().Exists().Key(lockKeys(name).Hash).Build()).AsInt64()
		require.NoError(t, err)
		n += int(exists)
	}
	return n
}

func TestRedLockAllUp(t *testing.T) {
	ms := startMasters(t, 5)
	name := redistest.LockName(t)
	rl := rlock.NewRedLock(ms.mutexes(t, name)...)

	ctx, err := rl.Lock(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 5, ms.held(t, name), "every node holds a part")
	inner, err := rl.Lock(ctx)
	require.NoError(t, err, "re-entry")
	require.NoError(t, rl.Unlock(inner))
	assert.NoError(t, ctx.Err(), "one level is left")
	require.NoError(t, rl.Unlock(ctx))
	assert.Error(t, ctx.Err(), "the final Unlock ends the context")
	assert.Zero(t, ms.held(t, name), "no key left on any node")
	assert.ErrorIs(t, rl.Unlock(ctx), rlock.ErrNotHeld)
}

func TestRedLockQuorum(t *testing.T) {
	for _, tc := range []struct {
		killed int
		taken  bool
	}{{killed: 2, taken: true}, {killed: 3, taken: false}} {
		t.Run(fmt.Sprintf("%dKilled", tc.killed), func(t *testing.T) {
			ms := startMasters(t, 5)
			name := redistest.LockName(t)
			rl := rlock.NewRedLock(ms.mutexes(t, name)...)
			for _, node := range ms.nodes[:tc.killed] {
				require.NoError(t, node.Kill(t.Context()))
			}
			ctx, ok, err := rl.TryLock(t.Context(), 0, 10*time.Second)
			require.NoError(t, err)
			require.Equal(t, tc.taken, ok, "RedLock with %d of 5 nodes killed", tc.killed)
			if ok {
				assert.Equal(t, 5-tc.killed, ms.held(t, name))
				require.NoError(t, rl.Unlock(ctx))
			}
			assert.Zero(t, ms.held(t, name), "no key left on the live nodes")
		})
	}
}

func TestMultiLockNeedsEveryNode(t *testing.T) {
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	ml := rlock.NewMultiLock(ms.mutexes(t, name)...)
	require.NoError(t, ms.nodes[2].Kill(t.Context()))

	_, ok, err := ml.TryLock(t.Context(), 300*time.Millisecond, 5*time.Second)
	require.NoError(t, err)
	assert.False(t, ok, "a MultiLock with a node down is not taken")
	assert.Zero(t, ms.held(t, name), "and leaves no key behind")
}

// TestRedLockSlowNode delays one node's link past the lease: the RedLock is
// taken on the others with a positive validity, and is never handed out
// already expired.
func TestRedLockSlowNode(t *testing.T) {
	ms := startMasters(t, 5)
	name := redistest.LockName(t)
	const lease = 2 * time.Second
	proxy := ms.nodes[0].Proxy(t)
	slow, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr()}})
	require.NoError(t, err)
	t.Cleanup(slow.Close)
	slowClient := newRlock(t, slow)

	mutexes := ms.mutexes(t, name)
	mutexes[0] = slowClient.Mutex(name)
	rl := rlock.NewRedLock(mutexes...)
	proxy.Delay(2 * lease)

	start := time.Now()
	ctx, ok, err := rl.TryLock(t.Context(), 0, lease)
	require.NoError(t, err)
	took := time.Since(start)
	if ok {
		// The bound is the property: whatever the machine's load, a lock
		// whose lease ran out while it was taken must not be handed out.
		assert.Less(t, took, lease, "a RedLock is never handed out after its lease ran out")
		assert.NoError(t, ctx.Err(), "and its context is live")
		assert.GreaterOrEqual(t, ms.held(t, name), 3, "a quorum holds it")
		require.NoError(t, rl.Unlock(ctx))
	}
}

// TestRedLocksContend runs two owners, each with its own Clients, against the
// same five nodes: they must never both hold the RedLock.
func TestRedLocksContend(t *testing.T) {
	ms := startMasters(t, 5)
	name := redistest.LockName(t)
	var inside, overlaps, taken atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		rl := rlock.NewRedLock(ms.mutexes(t, name)...)
		wg.Go(func() {
			for range 40 {
				ctx, ok, err := rl.TryLock(t.Context(), time.Second, 5*time.Second)
				if !assert.NoError(t, err) || !ok {
					continue
				}
				taken.Add(1)
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(time.Millisecond) // a hold for the other owner to meet
				inside.Add(-1)
				assert.NoError(t, rl.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, overlaps.Load(), "two RedLock holders at once")
	assert.GreaterOrEqual(t, taken.Load(), int32(20), "the owners got the lock in turn")
}

// TestRedLockWatchdog: a node restarted empty gets its part back on the next
// renewal; with three nodes gone the holder's context ends with ErrLockLost,
// and its cause tells why the part that broke the quorum went.
func TestRedLockWatchdog(t *testing.T) {
	ms := startMasters(t, 5)
	name := redistest.LockName(t)
	const lease = time.Second
	rl := rlock.NewRedLock(ms.mutexes(t, name, rlock.WithLeaseTime(lease))...)
	ctx, err := rl.Lock(t.Context())
	require.NoError(t, err)

	require.NoError(t, ms.nodes[0].Kill(t.Context()))
	require.NoError(t, ms.nodes[0].Restart(t.Context()))
	redistest.Eventually(t, "the restarted node's part is taken again", func(context.Context) error {
		return redistest.Exactly("nodes holding", ms.held(t, name), 5)
	})
	require.NoError(t, ctx.Err(), "losing one node of five loses nothing")

	for _, node := range ms.nodes[:3] {
		require.NoError(t, node.Kill(t.Context()))
	}
	receive(t, ctx.Done(), "the end of the holder's context after three of five nodes were lost")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
	assert.ErrorContains(t, context.Cause(ctx), "the last part lost: rlock: lock lost", "the cause says why the last part went")
	assert.ErrorIs(t, rl.Unlock(ctx), rlock.ErrNotHeld, "the hold had ended: its owner holds the RedLock no more")
	assert.Zero(t, ms.held(t, name), "Unlock still released the parts on the live nodes")
}

// TestRedLockRetakeStopsAtClose has a RedLock lose a part to another owner,
// so that it keeps trying to take it again every renewal period, and then
// closes that node's Client: the retaking goroutine must be gone at once,
// not a period later, while the RedLock lives on with its quorum.
func TestRedLockRetakeStopsAtClose(t *testing.T) {
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	const lease = 3 * time.Second // renewals and retakes every second
	clients := make([]*rlock.Client, len(ms.nodes))
	mutexes := make([]*rlock.Mutex, len(ms.nodes))
	for i, node := range ms.nodes {
		c, err := rlock.New(node.Client(t), rlock.WithLeaseTime(lease))
		require.NoError(t, err)
		clients[i], mutexes[i] = c, c.Mutex(name)
	}
	rl := rlock.NewRedLock(mutexes...)
	ctx, err := rl.Lock(t.Context())
	require.NoError(t, err)

	// Another owner takes node 0's part in one step: the next renewal finds
	// it gone, and every retake is refused.
	k := lockKeys(name)
	steal := `redis.call('del', KEYS[1]); redis.call('hset', KEYS[1], 'rival', 1); redis.call('pexpire', KEYS[1], 60000); return 1`
	require.NoError(t, ms.raw[0].Do(t.Context(), ms.raw[0].B().Eval().Script(steal).Numkeys(1).Key(k.Hash).Build()).Error())
	require.Eventually(t, func() bool { return retaking() }, 2*lease, 10*time.Millisecond, "the RedLock retakes its lost part")
	require.NoError(t, ctx.Err(), "two of three parts are still a quorum")

	require.NoError(t, clients[0].Close())
	// The bound is the property: half a renewal period tells a goroutine
	// that stops at Close from one that sleeps its period out.
	assert.Eventually(t, func() bool { return !retaking() }, lease/6, 5*time.Millisecond,
		"no retaking goroutine outlives Close (it would sleep a renewal period, %v)", lease/3)
	assert.NoError(t, ctx.Err(), "the other two parts still hold the RedLock")
	assert.NoError(t, rl.Unlock(ctx))
	for _, c := range clients[1:] {
		require.NoError(t, c.Close())
	}
}

// retaking reports whether a MultiLock goroutine is retaking a lost part.
func retaking() bool {
	buf := make([]byte, 1<<22)
	return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("(*multiHold).retake"))
}

// TestMultiLockEndedByClose: a MultiLock and a RedLock whose parts'
// Clients are closed end their contexts with a cause that matches
// ErrClosed, as Client.Close promises for every hold it ends, and
// ErrLockLost. The MultiLock's parts share one Client; the RedLock's three
// are on three masters, two of whose Clients close (its quorum is two).
func TestMultiLockEndedByClose(t *testing.T) {
	name := redistest.LockName(t)
	check := func(t *testing.T, ml *rlock.MultiLock, closing ...*rlock.Client) {
		lctx, err := ml.Lock(t.Context())
		require.NoError(t, err)
		for _, c := range closing {
			require.NoError(t, c.Close())
		}
		receive(t, lctx.Done(), "the context ended by Close")
		assert.ErrorIs(t, context.Cause(lctx), rlock.ErrClosed)
		assert.ErrorIs(t, context.Cause(lctx), rlock.ErrLockLost)
	}
	t.Run("MultiLock", func(t *testing.T) {
		c, err := rlock.New(redistest.Shared(t).Client(t))
		require.NoError(t, err)
		check(t, rlock.NewMultiLock(c.Mutex(name+".a"), c.Mutex(name+".b"), c.Mutex(name+".c")), c)
	})
	t.Run("RedLock", func(t *testing.T) {
		ms := startMasters(t, 3)
		var clients []*rlock.Client
		var parts []*rlock.Mutex
		for _, node := range ms.nodes {
			c, err := rlock.New(node.Client(t))
			require.NoError(t, err)
			clients = append(clients, c)
			parts = append(parts, c.Mutex(name))
		}
		check(t, rlock.NewRedLock(parts...), clients[:2]...)
		require.NoError(t, clients[2].Close())
	})
}
