package rlock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// takeAll takes every lock at once, each for an owner of its own, and
// releases them when t ends: none of them is another's.
func takeAll(t *testing.T, mutexes ...*rlock.Mutex) {
	t.Helper()
	for _, mu := range mutexes {
		ctx, ok, err := mu.TryLock(t.Context(), 0, 0)
		require.NoError(t, err, "lock %q", mu.Name())
		require.True(t, ok, "lock %q is free while the others are held", mu.Name())
		t.Cleanup(func() { assert.NoError(t, mu.Unlock(ctx), "unlock %q", mu.Name()) })
	}
}

func TestNamingBracesAreNotHashTags(t *testing.T) {
	a, b := sharedClient(t), sharedClient(t)
	x := uuid.NewString()
	takeAll(t, a.Mutex(x), b.Mutex("{"+x+"}"), a.Mutex("{"+x+"}:unlock"), b.Mutex(x+"}"), a.Mutex("%7D"+x), b.Mutex("}"+x))
}

// TestNamingTokenSuffix takes the lock whose name is another lock's fencing
// counter key under a layout that kept a name's own hash tag: the counter is
// not touched, and the other lock keeps working with increasing tokens.
func TestNamingTokenSuffix(t *testing.T) {
	c := sharedClient(t)
	x := uuid.NewString()
	mu := c.Mutex(x)
	lockToken := func() int64 {
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err, "Lock(%q)", x)
		token, ok := mu.FencingToken(ctx)
		require.True(t, ok)
		require.NoError(t, mu.Unlock(ctx))
		return token
	}
	first := lockToken()

	tok := c.Mutex("{" + x + "}:token")
	ctx, err := tok.Lock(t.Context())
	require.NoError(t, err, "Lock(%q)", tok.Name())
	defer func() { assert.NoError(t, tok.Unlock(ctx)) }()

	assert.Greater(t, lockToken(), first, "the fencing counter of %q is intact", x)
}

func TestNamingHugeName(t *testing.T) {
	mu := sharedClient(t).Mutex(uuid.NewString() + strings.Repeat("{}:%", 1<<18)) // over 1 MiB
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	locked, err := mu.IsLocked(t.Context())
	require.NoError(t, err)
	assert.True(t, locked)
	require.NoError(t, mu.Unlock(ctx))
	locked, err = mu.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked)
}

func TestGroupedMutex(t *testing.T) {
	a, b := sharedClient(t), sharedClient(t)
	g := uuid.NewString()
	grouped := a.GroupedMutex(g, "a")
	assert.Equal(t, "a", grouped.Name())
	takeAll(t, grouped, b.GroupedMutex(g, "b"), a.GroupedMutex(g, "a:unlock"), b.GroupedMutex(g+"/a", "a"),
		a.Mutex(g), b.Mutex("{"+g+"}/a"), a.Mutex(g+"}/a"), b.Mutex("a"+g), a.GroupedMutex("a"+g, g))

	// A MultiLock of one Client over locks of one group.
	ml := rlock.NewMultiLock(a.GroupedMutex(g, "m1"), a.GroupedMutex(g, "m2"))
	ctx, err := ml.Lock(t.Context())
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(ctx))
}

// TestOverwrittenLock overwrites a held lock's key with a string: Unlock
// answers ErrNotHeld, as its doc promises, not Redis's WRONGTYPE; the hold's
// context ends as lost; and a new Lock fails before it writes anything.
func TestOverwrittenLock(t *testing.T) {
	c := sharedClient(t)
	rc := redistest.Shared(t).Client(t)
	name := redistest.LockName(t)
	mu := c.Mutex(name)
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	k := lockKeys(name)
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(k.Hash).Value("not a lock").Build()).Error())
	assert.ErrorIs(t, mu.Unlock(ctx), rlock.ErrNotHeld, "Unlock of an overwritten lock")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost, "the hold's context ends as lost")

	_, _, err = mu.TryLock(t.Context(), 0, 0)
	assert.ErrorContains(t, err, "WRONGTYPE", "a new Lock reports the foreign key")
	got, err := rc.Do(t.Context(), rc.B().Get().Key(k.Hash).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "not a lock", got, "and leaves it as it was")
	exists, err := rc.Do(t.Context(), rc.B().Exists().Key(k.Fence).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, exists, "no fence was written")
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error())
}
