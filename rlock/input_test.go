package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

func TestNewRejectsBadInput(t *testing.T) {
	_, err := rlock.New(nil)
	assert.ErrorIs(t, err, rlock.ErrNilClient)

	rc := redistest.Shared(t).Client(t)
	for name, opt := range map[string]rlock.Option{
		"negative lease":              rlock.WithLeaseTime(-time.Second),
		"lease below minimum":         rlock.WithLeaseTime(time.Millisecond),
		"zero retry timeout":          rlock.WithRetryTimeout(0),
		"prefix with a brace":         rlock.WithKeyPrefix("app{1}:"),
		"replica ack without timeout": rlock.WithReplicaAck(1, 0),
	} {
		c, err := rlock.New(rc, opt)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, name)
		assert.Nil(t, c, name)
	}
	for name, opt := range map[string]rlock.Option{
		"nil logger":             rlock.WithLogger(nil),
		"negative replica count": rlock.WithReplicaAck(-1, time.Second),
	} {
		c, err := rlock.New(rc, opt)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, name)
		assert.Nil(t, c, name)
	}
}

// TestZeroValues: a Client, Mutex or MultiLock that was declared, not made,
// answers every call with an error, never a panic.
func TestZeroValues(t *testing.T) {
	ctx := t.Context()
	var c rlock.Client
	_, err := c.Mutex("x").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	_, err = c.GroupedMutex("g", "x").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	assert.ErrorIs(t, c.Close(), rlock.ErrNilClient)

	var mu rlock.Mutex
	_, err = mu.Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNilClient)
	_, err = mu.ForceUnlock(ctx)
	assert.ErrorIs(t, err, rlock.ErrNilClient)

	var ml rlock.MultiLock
	_, err = ml.Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrInvalidArgument)
	assert.ErrorIs(t, ml.Unlock(ctx), rlock.ErrInvalidArgument)
	var nilML *rlock.MultiLock
	_, _, err = nilML.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidArgument)
}

// TestMultiLockRejectsBadMembers: no members, a nil member, one lock twice,
// and a RedLock whose members share a Client are refused before anything is
// sent.
func TestMultiLockRejectsBadMembers(t *testing.T) {
	ctx := t.Context()
	a, b := sharedClient(t), sharedClient(t)
	name := redistest.LockName(t)
	for what, ml := range map[string]*rlock.MultiLock{
		"no mutexes":          rlock.NewMultiLock(),
		"a nil mutex":         rlock.NewRedLock(a.Mutex(name), nil, b.Mutex(name)),
		"one lock twice":      rlock.NewMultiLock(a.Mutex(name), a.Mutex(name)),
		"redlock, one Client": rlock.NewRedLock(a.Mutex(name), a.Mutex(name+":2"), b.Mutex(name)),
	} {
		_, err := ml.Lock(ctx)
		assert.ErrorIs(t, err, rlock.ErrInvalidArgument, what)
	}
	locked, err := a.Mutex(name).IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "nothing was taken")

	ml := rlock.NewMultiLock(a.Mutex(name), a.Mutex(name+":2"))
	lctx, err := ml.Lock(ctx)
	require.NoError(t, err, "a MultiLock over two locks of one Client is fine")
	require.NoError(t, ml.Unlock(lctx))
}

func TestMutexRejectsBadInput(t *testing.T) {
	c := sharedClient(t)
	ctx := t.Context()

	_, err := c.Mutex("").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	_, err = c.GroupedMutex("", "x").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	_, err = c.GroupedMutex("g", "").Lock(ctx)
	assert.ErrorIs(t, err, rlock.ErrInvalidName)

	mu := c.Mutex("input")
	_, err = mu.LockFor(ctx, -time.Second)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	_, err = mu.LockFor(ctx, 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	_, _, err = mu.TryLock(ctx, -time.Second, 0)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration)
	_, _, err = mu.TryLock(ctx, 0, time.Millisecond)
	assert.ErrorIs(t, err, rlock.ErrInvalidDuration, "a lease below MinLease")

	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = mu.Lock(nil)
	assert.ErrorIs(t, err, rlock.ErrNilContext)

	assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNotHeld, "a context with no owner holds nothing")
	n, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	_, ok := mu.FencingToken(ctx)
	assert.False(t, ok)
}

func TestNilHandles(t *testing.T) {
	var c *rlock.Client
	_, err := c.Mutex("x").Lock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	assert.ErrorIs(t, c.Close(), rlock.ErrNilClient)

	var mu *rlock.Mutex
	_, err = mu.Lock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	assert.ErrorIs(t, mu.Unlock(t.Context()), rlock.ErrNilClient)
	assert.Empty(t, mu.Name())

	var zero rlock.Mutex
	_, err = zero.IsLocked(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
}

func TestCallsAfterClose(t *testing.T) {
	c, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	mu := c.Mutex("after-close")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close twice")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "Close ends the holds' contexts")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrClosed)

	_, err = mu.Lock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed)
	_, _, err = mu.TryLock(t.Context(), 0, 0)
	assert.ErrorIs(t, err, rlock.ErrClosed)
	assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrClosed)
	_, err = mu.ForceUnlock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed)
	_, err = mu.IsLocked(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed)
	_, err = mu.RemainingLease(t.Context())
	assert.ErrorIs(t, err, rlock.ErrClosed)
}
