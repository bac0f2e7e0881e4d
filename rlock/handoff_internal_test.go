package rlock

import (
	"context"
	"io"
	"net"
	"slices"
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

// handOverLock is what the hand-over tests call on a lock whose Unlock
// hands over: a Mutex or a FairMutex.
type handOverLock interface {
	Lock(ctx context.Context) (context.Context, error)
	LockFor(ctx context.Context, lease time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
	HoldCount(ctx context.Context) (int, error)
	FencingToken(ctx context.Context) (int64, bool)
}

// handOverKind is one kind of lock whose Unlock hands over, as the tests
// open it: its handle, its keys and its scripts.
type handOverKind struct {
	name string
	open func(c *Client, name string) handOverLock
	keys func(name string) keys.Keys
	kind *kind
}

// handOverKinds are the kinds every hand-over test runs on.
var handOverKinds = []handOverKind{
	{"Mutex", func(c *Client, name string) handOverLock { return c.Mutex(name) }, func(name string) keys.Keys { return keys.New(DefaultKeyPrefix, name) }, mutexKind},
	{"FairMutex", func(c *Client, name string) handOverLock { return c.FairMutex(name) }, func(name string) keys.Keys { return keys.NewFair(DefaultKeyPrefix, name) }, fairKind},
}

// forHandOverKinds runs test on each kind of handOverKinds.
func forHandOverKinds(t *testing.T, test func(t *testing.T, k handOverKind)) {
	for _, k := range handOverKinds {
		t.Run(k.name, func(t *testing.T) { test(t, k) })
	}
}

// scriptHook lets a test stand between a Client and Redis for the calls
// of a lock kind's release script on one lock: release is called with the
// way to send each such call (now or later, under a context of its
// choice), and answers in its place. Every other command goes through, and
// acquires are counted once answered.
type scriptHook struct {
	rueidis.Client
	hash     string
	kind     *kind
	acquires atomic.Int64
	release  func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult
}

func (h *scriptHook) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[3] == h.hash {
		switch args[1] {
		case h.kind.acquire.SHA1(), h.kind.acquire.Text():
			defer h.acquires.Add(1) // once Redis answered
		case h.kind.release.SHA1(), h.kind.release.Text():
			if h.release != nil {
				return h.release(func(ctx context.Context) rueidis.RedisResult { return h.Client.Do(ctx, cmd) })
			}
		}
	}
	return h.Client.Do(ctx, cmd)
}

// lost is a reply that never came: the call may have run.
func lost() rueidis.RedisResult {
	return rueidis.NewErrorResult(&net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF})
}

// handOverSetup is a Client through hook on a fresh lock, a holder, and a
// waiter of the same Client parked on the lock, whose Lock's outcome
// arrives on got.
type handOverSetup struct {
	c      *Client
	mu     handOverLock
	keys   keys.Keys
	raw    rueidis.Client
	hook   *scriptHook
	holder context.Context
	got    chan lockResult
	cancel context.CancelFunc // the waiter's
}

type lockResult struct {
	ctx context.Context
	err error
}

func newHandOver(t *testing.T, k handOverKind, opts ...Option) *handOverSetup {
	return newHandOverFor(t, k, 0, opts...)
}

// newHandOverFor is newHandOver with a waiter that asks for lease (0: the
// watchdog's).
func newHandOverFor(t *testing.T, k handOverKind, lease time.Duration, opts ...Option) *handOverSetup {
	node := redistest.Shared(t)
	s := &handOverSetup{raw: node.Client(t), keys: k.keys(t.Name()), got: make(chan lockResult, 1)}
	// Redis knows the scripts before the hook counts calls, so that no
	// EVALSHA meets NOSCRIPT and counts twice (Exec's fallback to EVAL).
	for _, sc := range []*lua.Script{k.kind.acquire, k.kind.release} {
		require.NoError(t, s.raw.Do(t.Context(), s.raw.B().ScriptLoad().Script(sc.Text()).Build()).Error())
	}
	s.hook = &scriptHook{Client: node.Client(t), hash: s.keys.Hash, kind: k.kind}
	c, err := New(s.hook, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	s.c, s.mu = c, k.open(c, t.Name())
	s.holder, err = s.mu.Lock(t.Context())
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(t.Context())
	s.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		lock := s.mu.Lock
		if lease > 0 {
			lock = func(ctx context.Context) (context.Context, error) { return s.mu.LockFor(ctx, lease) }
		}
		lctx, err := lock(wctx)
		s.got <- lockResult{lctx, err}
	}()
	require.Eventually(t, func() bool { return c.lot.live.Load() > 0 }, 5*time.Second, time.Millisecond, "the waiter parks")
	return s
}

// waiterGot returns the parked waiter's Lock outcome.
func (s *handOverSetup) waiterGot(t *testing.T) lockResult {
	t.Helper()
	select {
	case r := <-s.got:
		return r
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the waiter's Lock did not return")
		return lockResult{}
	}
}

// assertHeld asserts that ctx holds the lock alone, one level, under the
// token Redis issued last.
func (s *handOverSetup) assertHeld(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, ctx.Err())
	n, err := s.mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the heir holds one level")
	token, ok := s.mu.FencingToken(ctx)
	require.True(t, ok)
	issued, err := s.raw.Do(t.Context(), s.raw.B().Get().Key(s.keys.Token).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, issued, token, "the heir holds under the token issued last")
	fields, err := s.raw.Do(t.Context(), s.raw.B().Hkeys().Key(s.keys.Hash).Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Len(t, slices.DeleteFunc(fields, func(f string) bool { return f == "waiters" }), 2, "one owner (its count and its seq): %v", fields)
}

// assertFree asserts that nothing holds the lock.
func (s *handOverSetup) assertFree(t *testing.T) {
	t.Helper()
	n, err := s.raw.Do(t.Context(), s.raw.B().Exists().Key(s.keys.Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock is free")
}

// TestHandOverInOneCall: the holder's Unlock hands the lock to the waiter
// of its Client that sleeps on it, in the release call: the waiter holds
// it without an acquire of its own.
func TestHandOverInOneCall(t *testing.T) {
	forHandOverKinds(t, func(t *testing.T, k handOverKind) {
		s := newHandOver(t, k)
		before := s.hook.acquires.Load()
		require.NoError(t, s.mu.Unlock(s.holder))
		r := s.waiterGot(t)
		require.NoError(t, r.err)
		assert.Equal(t, before, s.hook.acquires.Load(), "the waiter sent no acquire")
		assert.ErrorIs(t, s.holder.Err(), context.Canceled, "the Unlock ended the holder's lock context")
		s.assertHeld(t, r.ctx)
		require.NoError(t, s.mu.Unlock(r.ctx))
		s.assertFree(t)
	})
}

// TestHandOverFixedLease: a waiter that asked for a fixed lease is handed
// the lock under that lease, which Redis enforces and its lock context
// ends with.
func TestHandOverFixedLease(t *testing.T) {
	forHandOverKinds(t, func(t *testing.T, k handOverKind) {
		const lease = 400 * time.Millisecond
		s := newHandOverFor(t, k, lease)
		require.NoError(t, s.mu.Unlock(s.holder))
		r := s.waiterGot(t)
		require.NoError(t, r.err)
		pttl, err := s.raw.Do(t.Context(), s.raw.B().Pttl().Key(s.keys.Hash).Build()).AsInt64()
		require.NoError(t, err)
		assert.LessOrEqual(t, pttl, lease.Milliseconds(), "Redis keeps the heir's lease")
		assert.Positive(t, pttl)
		select {
		case <-r.ctx.Done():
			assert.ErrorIs(t, context.Cause(r.ctx), ErrLockLost, "the lease ran out")
		case <-time.After(redistest.Patience):
			require.FailNow(t, "the heir's lock context outlived its lease")
		}
	})
}

// TestHandOverReplyLost: the reply of the release that handed the lock
// over is lost; the resend answers as that call did, and hands nothing
// twice.
func TestHandOverReplyLost(t *testing.T) {
	forHandOverKinds(t, func(t *testing.T, k handOverKind) {
		s := newHandOver(t, k)
		var calls atomic.Int64
		s.hook.release = func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult {
			res := send(t.Context())
			if calls.Add(1) == 1 {
				return lost()
			}
			return res
		}
		before := s.hook.acquires.Load()
		require.NoError(t, s.mu.Unlock(s.holder))
		assert.EqualValues(t, 2, calls.Load(), "one resend")
		r := s.waiterGot(t)
		require.NoError(t, r.err)
		assert.Equal(t, before, s.hook.acquires.Load(), "the waiter sent no acquire")
		s.assertHeld(t, r.ctx)
		require.NoError(t, s.mu.Unlock(r.ctx))
		s.assertFree(t)
	})
}

// TestHandOverOutcomeUnknown: every reply of the release is lost, the
// first after it ran: the Unlock fails, and the heir, told to look again,
// finds with its own call that it holds the lock, once.
func TestHandOverOutcomeUnknown(t *testing.T) {
	forHandOverKinds(t, func(t *testing.T, k handOverKind) {
		s := newHandOver(t, k, WithRetryTimeout(300*time.Millisecond))
		var down atomic.Bool
		down.Store(true)
		var ran atomic.Bool
		s.hook.release = func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult {
			switch {
			case !down.Load():
				return send(t.Context())
			case ran.CompareAndSwap(false, true):
				send(t.Context())
			}
			return lost()
		}
		before := s.hook.acquires.Load()
		require.Error(t, s.mu.Unlock(s.holder), "no reply came")
		down.Store(false)
		r := s.waiterGot(t)
		require.NoError(t, r.err)
		assert.Greater(t, s.hook.acquires.Load(), before, "the heir asked")
		s.assertHeld(t, r.ctx)
		require.NoError(t, s.mu.Unlock(r.ctx))
		s.assertFree(t)
	})
}

// TestHandOverHeirGaveUp: the heir's context ends while the release that
// hands it the lock is on its way: its Lock fails, and the level it was
// handed is given back at once, never left held.
func TestHandOverHeirGaveUp(t *testing.T) {
	forHandOverKinds(t, func(t *testing.T, k handOverKind) {
		s := newHandOver(t, k)
		entered, resume := make(chan struct{}), make(chan struct{})
		s.hook.release = func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult {
			close(entered)
			<-resume
			return send(t.Context())
		}
		unlocked := make(chan error, 1)
		go func() { unlocked <- s.mu.Unlock(s.holder) }()
		receive(t, entered)
		s.hook.release = nil
		s.cancel()
		close(resume)
		require.NoError(t, <-unlocked)
		r := s.waiterGot(t)
		require.ErrorIs(t, r.err, context.Canceled)
		s.assertFree(t)
	})
}

// TestHandOverLateCopy: the release's first call is held back, every
// resend is lost, and the Unlock fails; the heir's next call fences the
// hand-over. When the held-back copy then arrives, it frees the lock and
// hands nothing in its reply: the heir takes the lock by its own acquire
// (a FairMutex's, by the message that any release sends the head of its
// queue, which the heir is).
func TestHandOverLateCopy(t *testing.T) {
	forHandOverKinds(t, func(t *testing.T, k handOverKind) {
		s := newHandOver(t, k, WithRetryTimeout(300*time.Millisecond))
		var (
			down    atomic.Bool
			stashed atomic.Pointer[func(context.Context) rueidis.RedisResult]
		)
		down.Store(true)
		s.hook.release = func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult {
			if !down.Load() {
				return send(t.Context())
			}
			stashed.CompareAndSwap(nil, &send)
			return lost()
		}
		before := s.hook.acquires.Load()
		require.Error(t, s.mu.Unlock(s.holder), "no reply came")
		require.Eventually(t, func() bool { return s.hook.acquires.Load() > before }, 5*time.Second, time.Millisecond, "the heir asks, and is refused")
		down.Store(false)
		late, err := (*stashed.Load())(t.Context()).AsIntSlice()
		require.NoError(t, err)
		assert.Equal(t, int64(lua.Freed), late[0], "the late copy frees the lock and hands nothing: %v", late)
		r := s.waiterGot(t)
		require.NoError(t, r.err)
		s.assertHeld(t, r.ctx)
		require.NoError(t, s.mu.Unlock(r.ctx))
		s.assertFree(t)
	})
}

// receive waits for ch to be closed or to deliver.
func receive(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "timed out")
	}
}
