package rlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/rlock"
)

// prAction is what prHook does with one matching script call: before runs
// first (if set); run says whether the call reaches Redis now; late keeps
// it to be sent later (prHook.deliver); the caller always gets a lost
// reply.
type prAction struct {
	before func()
	run    bool
	late   bool
}

// prHook is a rueidis client that loses the replies of chosen calls of
// one script on one key: each call of script s on key takes the next
// action queued for it.
type prHook struct {
	rueidis.Client
	key string

	mu      sync.Mutex
	actions map[*lua.Script][]prAction
	kept    [][]string
	lost    int
}

var errPrLost = errors.New("prHook: reply lost in transit")

func (h *prHook) queue(s *lua.Script, a ...prAction) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.actions == nil {
		h.actions = map[*lua.Script][]prAction{}
	}
	h.actions[s] = append(h.actions[s], a...)
}

func (h *prHook) next(args []string) (prAction, bool) {
	if len(args) < 4 || (args[0] != "EVALSHA" && args[0] != "EVAL") || args[3] != h.key {
		return prAction{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s, q := range h.actions {
		if (args[1] != s.SHA1() && args[1] != s.Text()) || len(q) == 0 {
			continue
		}
		h.actions[s] = q[1:]
		h.lost++
		return q[0], true
	}
	return prAction{}, false
}

func (h *prHook) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := append([]string(nil), cmd.Commands()...)
	a, ok := h.next(args)
	if !ok {
		return h.Client.Do(ctx, cmd)
	}
	if a.before != nil {
		a.before()
	}
	switch {
	case a.late:
		h.mu.Lock()
		h.kept = append(h.kept, args)
		h.mu.Unlock()
	case a.run:
		if err := h.Client.Do(ctx, cmd).Error(); err != nil {
			return rueidis.NewErrorResult(err)
		}
	}
	return rueidis.NewErrorResult(errPrLost)
}

// deliver sends the kept calls now, as copies that arrive late, and
// returns their replies.
func (h *prHook) deliver(t *testing.T) []rueidis.RedisResult {
	h.mu.Lock()
	kept := h.kept
	h.kept = nil
	h.mu.Unlock()
	var out []rueidis.RedisResult
	for _, args := range kept {
		out = append(out, h.Client.Do(t.Context(), h.Client.B().Arbitrary(args[0]).Args(args[1:]...).Build()))
	}
	return out
}

// hookedMutex returns a client of the shared Redis, and a Mutex whose
// Client sends through a prHook on its lock, with the lock's keys.
func hookedMutex(t *testing.T) (rueidis.Client, keys.Keys, *prHook, *rlock.Mutex) {
	t.Helper()
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	k := lockKeys(name)
	hook := &prHook{Client: node.Client(t), key: k.Hash}
	return node.Client(t), k, hook, newRlock(t, hook).Mutex(name)
}

// TestProtocolLateAcquireCopyAfterUnlock: a Lock whose first call is
// held back in transit is resent and granted; the owner unlocks; then the
// held-back original reaches Redis. It must be refused as stale: the lock
// stays free and another owner can take it.
func TestProtocolLateAcquireCopyAfterUnlock(t *testing.T) {
	raw, k, hook, mu := hookedMutex(t)

	hook.queue(lua.Acquire, prAction{late: true})
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(ctx))

	replies := hook.deliver(t)
	require.Len(t, replies, 1)
	vals, err := replies[0].AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, int64(lua.Stale), vals[0], "the late copy is refused: %v", vals)
	n, err := raw.Do(t.Context(), raw.B().Exists().Key(k.Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock is free after the late copy")
}

// TestProtocolLockCancelledInBackoffSettles: a Lock's first call
// takes the lock but its reply is lost; the caller's context ends during
// the resend backoff. Lock fails, and the lock is free again (the settle
// took back what the lost call did), also after a late copy of a second,
// held-back call arrives.
func TestProtocolLockCancelledInBackoffSettles(t *testing.T) {
	raw, k, hook, mu := hookedMutex(t)

	ctx, cancel := context.WithCancel(t.Context())
	hook.queue(lua.Acquire, prAction{run: true, before: func() {
		time.AfterFunc(5*time.Millisecond, cancel) // inside the 20 ms backoff
	}})
	lctx, err := mu.Lock(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Same(t, ctx, lctx)
	n, err := raw.Do(t.Context(), raw.B().Exists().Key(k.Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the settle freed the lock the lost call took")
	other, ok, err := mu.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "a new owner takes the free lock")
	require.NoError(t, mu.Unlock(other))
}

// TestProtocolLatchLateCopyCountsOnce: a CountDown whose first call
// is held back is resent and counts; the late original then arrives and
// must not count again.
func TestProtocolLatchLateCopyCountsOnce(t *testing.T) {
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	k := keys.NewLatch("rlock:", name)
	hook := &prHook{Client: node.Client(t), key: k.Hash}
	l := newRlock(t, hook).CountDownLatch(name)
	ok, err := l.TrySetCount(t.Context(), 3)
	require.NoError(t, err)
	require.True(t, ok)

	hook.queue(lua.LatchCountDown, prAction{late: true})
	require.NoError(t, l.CountDown(t.Context()))
	hook.deliver(t)
	n, err := l.Count(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "one CountDown counts once")

	// A reply lost after the call ran: the resend answers COUNTED, and
	// nothing counts twice.
	hook.queue(lua.LatchCountDown, prAction{run: true})
	require.NoError(t, l.CountDown(t.Context()))
	n, err = l.Count(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestProtocolPermitReleaseLostReplyThenOtherClient: a permit given
// back by Client B whose reply was lost after it ran answers nil once
// resent; a second ReleasePermit of the same id, from Client A, finds no
// permit (ErrNotHeld), and frees nothing else.
func TestProtocolPermitReleaseLostReplyThenOtherClient(t *testing.T) {
	node := redistest.Shared(t)
	name := redistest.LockName(t)
	k := keys.NewSemaphore("rlock:", name)
	hook := &prHook{Client: node.Client(t), key: k.Hash}
	a := newRlock(t, node.Client(t)).Semaphore(name)
	b := newRlock(t, hook).Semaphore(name)
	_, err := a.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)

	id, err := a.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	id2, err := a.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, 1, available(t, a))

	hook.queue(lua.SemaphorePermitRelease, prAction{run: true})
	require.NoError(t, b.ReleasePermit(t.Context(), id), "the resend answers as the call that ran")
	assert.Equal(t, 2, available(t, a))
	assert.ErrorIs(t, a.ReleasePermit(t.Context(), id), rlock.ErrNotHeld)
	assert.ErrorIs(t, b.ReleasePermit(t.Context(), id), rlock.ErrNotHeld, "B's next request is not taken for its earlier one")
	assert.Equal(t, 2, available(t, a))
	require.NoError(t, b.ReleasePermit(t.Context(), id2))
	assert.Equal(t, 3, available(t, a))
}
