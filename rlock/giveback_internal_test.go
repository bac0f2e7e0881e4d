package rlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// requestHook stands between a Client and Redis for the Mutex scripts'
// calls on one lock: afterAcquire runs once an acquire was answered, and
// release, when set, answers a release call in place of Redis (send runs
// it for real). Every other command goes through.
type requestHook struct {
	rueidis.Client
	hash         string
	afterAcquire func(reply []int64)
	release      func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult
	mu           sync.Mutex
}

func (h *requestHook) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[3] == h.hash {
		switch args[1] {
		case mutexKind.acquire.SHA1(), mutexKind.acquire.Text():
			res := h.Client.Do(ctx, cmd)
			h.mu.Lock()
			f := h.afterAcquire
			h.mu.Unlock()
			if f != nil {
				reply, _ := res.AsIntSlice()
				f(reply)
			}
			return res
		case mutexKind.release.SHA1(), mutexKind.release.Text():
			h.mu.Lock()
			f := h.release
			h.mu.Unlock()
			if f != nil {
				return f(ctx, func() rueidis.RedisResult { return h.Client.Do(ctx, cmd) })
			}
		}
	}
	return h.Client.Do(ctx, cmd)
}

// newHookedClient returns a Client through a requestHook on a fresh lock
// name, the hook, the name, the lock's keys, and a raw client of the same Redis.
func newHookedClient(t *testing.T, opts ...Option) (*Client, *requestHook, string, keys.Keys, rueidis.Client) {
	node := redistest.Shared(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	ks := keys.New(DefaultKeyPrefix, name)
	for _, sc := range []*lua.Script{mutexKind.acquire, mutexKind.release} {
		require.NoError(t, raw.Do(t.Context(), raw.B().ScriptLoad().Script(sc.Text()).Build()).Error())
	}
	hook := &requestHook{Client: node.Client(t), hash: ks.Hash}
	c, err := New(hook, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.Close())
		raw.Do(context.Background(), raw.B().Del().Key(ks.Hash).Build())
	})
	return c, hook, name, ks, raw
}

// dropFirstRelease makes the hook lose every call of the first release
// request it sees (all its resends, which share one context), and pass
// every later one.
func dropFirstRelease(h *requestHook) *atomic.Int64 {
	var first atomic.Pointer[context.Context]
	var dropped atomic.Int64
	h.mu.Lock()
	h.release = func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult {
		first.CompareAndSwap(nil, &ctx)
		if *first.Load() == ctx {
			dropped.Add(1)
			return lost() // never sent: the lock keeps its level
		}
		return send()
	}
	h.mu.Unlock()
	return &dropped
}

// TestGrantToDoneContextNeverKeptAfterLostGiveBack: a Lock's ctx
// ends just as Redis grants it the lock. Lock fails with ctx's error; the
// level granted must not stay held. Here the give-back of that level gets
// no reply for the whole retry timeout (Redis unreachable for a moment),
// and Redis answers again afterwards. The lock must then be free within
// a lease or two: nobody holds a context for it, and nobody will ever
// Unlock it.
func TestGrantToDoneContextNeverKeptAfterLostGiveBack(t *testing.T) {
	const lease = 500 * time.Millisecond
	c, hook, name, ks, raw := newHookedClient(t, WithRetryTimeout(300*time.Millisecond), WithLeaseTime(lease))
	m := c.Mutex(name)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once atomic.Bool
	hook.mu.Lock()
	hook.afterAcquire = func(reply []int64) {
		if len(reply) == 3 && reply[0] == int64(lua.Granted) && once.CompareAndSwap(false, true) {
			cancel() // the caller gives up as the grant arrives
		}
	}
	hook.mu.Unlock()
	dropped := dropFirstRelease(hook)

	_, err := m.Lock(ctx)
	require.ErrorIs(t, err, context.Canceled, "Lock fails: its ctx ended")
	require.Positive(t, dropped.Load(), "the give-back's calls were lost")

	// Nobody holds the lock now: it must be free within its lease (plus
	// generous slack), not renewed on and on by the watchdog.
	deadline := time.Now().Add(6 * lease)
	for {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(ks.Hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			fields, _ := raw.Do(t.Context(), raw.B().Hgetall().Key(ks.Hash).Build()).AsStrMap()
			pttl, _ := raw.Do(t.Context(), raw.B().Pttl().Key(ks.Hash).Build()).AsInt64()
			require.Failf(t, "a lock nobody holds is kept",
				"%v after the failed Lock the lock is still held: %v, %d ms left (the watchdog renews it)", 6*lease, fields, pttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHeirGaveUpNeverKeptAfterLostGiveBack: a release hands the
// lock to a parked waiter of its Client whose ctx ends meanwhile. Its Lock
// fails; the level it was handed must not stay held. The give-back of that
// level gets no reply for the whole retry timeout, and Redis answers again
// afterwards. The lock must then be free within a lease or two.
func TestHeirGaveUpNeverKeptAfterLostGiveBack(t *testing.T) {
	const lease = 500 * time.Millisecond
	c, hook, name, ks, raw := newHookedClient(t, WithRetryTimeout(300*time.Millisecond), WithLeaseTime(lease))
	m := c.Mutex(name)
	holder, err := m.Lock(t.Context())
	require.NoError(t, err)

	wctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan error, 1)
	go func() {
		lctx, err := m.Lock(wctx)
		if err == nil {
			m.Unlock(lctx)
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return c.lot.live.Load() > 0 }, 5*time.Second, time.Millisecond, "the waiter parks")

	var handOver, giveBack atomic.Pointer[context.Context]
	var dropped atomic.Int64
	hook.mu.Lock()
	hook.release = func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult {
		if handOver.CompareAndSwap(nil, &ctx) {
			res := send() // the hand-over applies
			cancel()      // and the heir gives up as it does
			return res
		}
		if *handOver.Load() != ctx {
			giveBack.CompareAndSwap(nil, &ctx)
		}
		if g := giveBack.Load(); g != nil && *g == ctx {
			dropped.Add(1)
			return lost() // the heir's give-back never reaches Redis
		}
		return send()
	}
	hook.mu.Unlock()

	require.NoError(t, m.Unlock(holder))
	select {
	case err := <-got:
		require.ErrorIs(t, err, context.Canceled, "the heir gave up")
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the heir's Lock did not return")
	}
	require.Positive(t, dropped.Load(), "the give-back's calls were lost")

	deadline := time.Now().Add(6 * lease)
	for {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(ks.Hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			fields, _ := raw.Do(t.Context(), raw.B().Hgetall().Key(ks.Hash).Build()).AsStrMap()
			pttl, _ := raw.Do(t.Context(), raw.B().Pttl().Key(ks.Hash).Build()).AsInt64()
			require.Failf(t, "a lock handed to a waiter that gave up is kept",
				"%v after the heir's Lock failed the lock is still held: %v, %d ms left (the watchdog renews it)", 6*lease, fields, pttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
