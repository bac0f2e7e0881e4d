package rlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

func TestInspectMutex(t *testing.T) {
	node := redistest.Shared(t)
	c := sharedClient(t)
	name := redistest.LockName(t)
	mu := c.Mutex(name)

	st, err := c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, rlock.LockState{Name: name, Key: lockKeys(name).Hash, Type: "none"}, st, "a lock never taken")

	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	ctx, err = mu.Lock(ctx)
	require.NoError(t, err)
	token, _ := mu.FencingToken(ctx)

	// A waiter through another Client.
	waiter, stranger := sharedClient(t).Mutex(name), sharedClient(t).Mutex(name)
	waiting := make(chan error, 1)
	go func() {
		wctx, err := waiter.Lock(t.Context())
		if err == nil {
			err = stranger.Unlock(wctx) // not its owner's Client: ErrNotHeld
		}
		waiting <- err
	}()
	require.Eventually(t, func() bool {
		st, err = mu.Inspect(t.Context())
		// The waiter subscribes before its next ask marks the lock: wait for both.
		return err == nil && st.Subscribers == 1 && st.Marks["waiters"] == "1"
	}, 10*time.Second, 5*time.Millisecond, "the waiter's subscription and its mark show")
	assert.Equal(t, "hash", st.Type)
	require.Len(t, st.Holders, 1)
	h := st.Holders[0]
	assert.True(t, h.Local, "held through this Client")
	assert.Equal(t, int64(2), h.Count, "held twice")
	assert.Zero(t, h.Lease, "a Mutex hold has no lease of its own")
	assert.Equal(t, token, st.FencingToken)
	assert.Greater(t, st.Lease, rlock.DefaultLeaseTime/2)
	assert.LessOrEqual(t, st.Lease, rlock.DefaultLeaseTime)
	assert.Equal(t, map[string]string{"waiters": "1"}, st.Marks, "only the waiter's mark")

	require.NoError(t, mu.Unlock(ctx))
	require.NoError(t, mu.Unlock(ctx))
	require.ErrorIs(t, <-waiting, rlock.ErrNotHeld)
	raw := node.Client(t)
	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(lockKeys(name).Hash).Build()).Error())
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	assert.Equal(t, token+1, st.FencingToken, "the waiter's token was the last handed out")
}

// TestInspectSharedHolds reads a hash as a primitive with own leases
// (readers, permits) leaves it: several holders, F#exp, marks of its own.
func TestInspectSharedHolds(t *testing.T) {
	raw := redistest.Shared(t).Client(t)
	c := sharedClient(t)
	name := redistest.LockName(t)
	key := lockKeys(name).Hash
	now, err := raw.Do(t.Context(), raw.B().Time().Build()).AsStrSlice()
	require.NoError(t, err)
	sec, err := strconv.ParseInt(now[0], 10, 64)
	require.NoError(t, err)
	ends := strconv.FormatInt(sec*1000+5000, 10)
	require.NoError(t, raw.Do(t.Context(), raw.B().Hset().Key(key).FieldValue().
		FieldValue("a:1:r", "2").FieldValue("a:1:r#seq", "7").FieldValue("a:1:r#exp", ends).
		FieldValue("b:9:r", "1").FieldValue("b:9:r#seq", "3").
		FieldValue("mode", "read").FieldValue("x#exp", "1").Build()).Error())
	require.NoError(t, raw.Do(t.Context(), raw.B().Pexpire().Key(key).Milliseconds(60000).Build()).Error())
	t.Cleanup(func() { raw.Do(context.Background(), raw.B().Del().Key(key).Build()) })

	st, err := c.Inspect(t.Context(), name)
	require.NoError(t, err)
	require.Len(t, st.Holders, 2)
	a, b := st.Holders[0], st.Holders[1]
	assert.Equal(t, "a:1:r", a.Field)
	assert.Equal(t, int64(2), a.Count)
	assert.False(t, a.Local)
	assert.Greater(t, a.Lease, 3*time.Second, "own lease measured on Redis's clock")
	assert.LessOrEqual(t, a.Lease, 6*time.Second)
	assert.Equal(t, "b:9:r", b.Field)
	assert.Zero(t, b.Lease)
	assert.Equal(t, map[string]string{"mode": "read", "x#exp": "1"}, st.Marks, "fields of no holder are marks")
	assert.Greater(t, st.Lease, 50*time.Second)

	// A key that is no lock is shown as what it is.
	require.NoError(t, raw.Do(t.Context(), raw.B().Set().Key(key).Value("x").Build()).Error())
	st, err = c.Inspect(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, "string", st.Type)
	assert.Empty(t, st.Holders)
	assert.Equal(t, time.Duration(-1), st.Lease, "no expiry")
}

func TestInspectBadInput(t *testing.T) {
	c := sharedClient(t)
	_, err := c.Inspect(t.Context(), "")
	assert.ErrorIs(t, err, rlock.ErrInvalidName)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = c.Inspect(nil, "x")
	assert.ErrorIs(t, err, rlock.ErrNilContext)
	var nilClient *rlock.Client
	_, err = nilClient.Inspect(t.Context(), "x")
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	var nilMutex *rlock.Mutex
	_, err = nilMutex.Inspect(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNilClient)
	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = closed.Inspect(t.Context(), "x")
	assert.ErrorIs(t, err, rlock.ErrClosed)
}
