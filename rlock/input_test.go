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
		"negative lease":      rlock.WithLeaseTime(-time.Second),
		"lease below minimum": rlock.WithLeaseTime(time.Millisecond),
		"zero retry timeout":  rlock.WithRetryTimeout(0),
		"prefix with a brace": rlock.WithKeyPrefix("app{1}:"),
		"nil logger":          rlock.WithLogger(nil),
	} {
		c, err := rlock.New(rc, opt)
		assert.Error(t, err, name)
		assert.Nil(t, c, name)
	}
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
