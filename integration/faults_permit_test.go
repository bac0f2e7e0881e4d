package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Lost replies and given-up requests on travelling permits (Semaphore's
// AcquirePermit and ReleasePermit), through the scriptTap of
// faults_semaphore_test.go: an acquire takes one permit however often it
// is resent, one whose caller gave up never takes one later, and a
// release resent after it applied answers success and frees nothing more.

// TestFaultPermitLostReplies: the replies of an AcquirePermit and of a
// ReleasePermit on another Client are lost twice each after the scripts
// ran: one permit is taken, then given back, and the resent release
// answers nil, as its first call would have; a second release of the
// permit is ErrNotHeld.
func TestFaultPermitLostReplies(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := keys.NewSemaphore(rlock.DefaultKeyPrefix, name)
	acquires, releases := &scriptTap{key1: k.Hash, key2: k.Token}, &scriptTap{key1: k.Hash, key2: k.Channel}
	front := newRlock(t, acquires.client(node.Client(t))).Semaphore(name)
	worker := newRlock(t, releases.client(node.Client(t))).Semaphore(name)
	_, err := front.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)
	other, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)

	acquires.plan(tapLose, tapLose)
	id, err := front.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, available(t, front), "one permit taken, though its acquire ran three times")
	releases.plan(tapLose, tapLose)
	require.NoError(t, worker.ReleasePermit(t.Context(), id), "a resent release of a permit it gave back")
	assert.Equal(t, 2, available(t, front), "one permit given back, once")
	assert.ErrorIs(t, worker.ReleasePermit(t.Context(), id), rlock.ErrNotHeld, "a new release finds it gone")
	assert.Equal(t, 2, available(t, front), "and frees nothing")
	require.NoError(t, worker.ReleasePermit(t.Context(), other))
	assert.Equal(t, 3, available(t, front))
	assert.True(t, keyGone(t, raw, k.Hash)(), "no holder left")
}

// TestFaultPermitGivenUp: an AcquirePermit that ran but whose caller gave
// up before the reply is taken back; one that never reached Redis before
// its caller gave up is refused when its copy arrives later; and a late
// copy of a ReleasePermit that a resend superseded frees nothing.
func TestFaultPermitGivenUp(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := keys.NewSemaphore(rlock.DefaultKeyPrefix, name)
	acquires, releases := &scriptTap{key1: k.Hash, key2: k.Token}, &scriptTap{key1: k.Hash, key2: k.Channel}
	sem := newRlock(t, releases.client(acquires.client(node.Client(t)))).Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 2)
	require.NoError(t, err)
	warm, err := sem.AcquirePermit(t.Context(), time.Minute) // the scripts are in Redis's cache
	require.NoError(t, err)
	require.NoError(t, sem.ReleasePermit(t.Context(), warm))

	for _, mode := range []tapMode{tapCancel, tapKeep} {
		ctx, cancel := context.WithCancel(t.Context())
		acquires.cancel = cancel
		acquires.plan(mode)
		id, err := sem.AcquirePermit(ctx, time.Minute)
		assert.ErrorIs(t, err, context.Canceled, "mode %d: the caller gave up", mode)
		assert.Empty(t, id)
		assert.Equal(t, 2, available(t, sem), "mode %d: the permits are free", mode)
	}
	require.Len(t, acquires.kept, 1)
	assert.Equal(t, []int64{2, 0}, replay(t, raw, acquires.kept[0]), "the late acquire is refused as stale")
	assert.Equal(t, 2, available(t, sem), "the late acquire took nothing")
	assert.True(t, keyGone(t, raw, k.Hash)(), "no holder left")

	a, err := sem.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	b, err := sem.AcquirePermit(t.Context(), time.Minute)
	require.NoError(t, err)
	releases.cancel = func() {} // ReleasePermit runs on when its caller gives up
	releases.plan(tapKeep)
	require.NoError(t, sem.ReleasePermit(t.Context(), a), "the resend gives the permit back")
	assert.Equal(t, 1, available(t, sem))
	require.Len(t, releases.kept, 1)
	assert.Equal(t, []int64{2, 0}, replay(t, raw, releases.kept[0]), "the late release is refused as stale")
	assert.Equal(t, 1, available(t, sem), "and frees nothing: b is held")
	require.NoError(t, sem.ReleasePermit(t.Context(), b))
	assert.True(t, keyGone(t, raw, k.Hash)(), "no holder left")
}
