package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// lockIn starts fm.Lock and returns a channel that receives its lock
// context.
func lockIn(t *testing.T, fm *rlock.FairMutex) <-chan context.Context {
	got := make(chan context.Context, 1)
	go func() {
		ctx, err := fm.Lock(t.Context())
		assert.NoError(t, err)
		got <- ctx
	}()
	return got
}

// TestFaultFairLostQueueReply loses the replies of the two acquire calls
// that queue a waiter, after each ran: the resends keep its place (one
// entry, its first ticket), so it still gets the lock before the waiter
// that queued after it.
func TestFaultFairLostQueueReply(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := fairKeys(name)
	holder := newRlock(t, node.Client(t)).FairMutex(name)
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)

	loss := &replyLoss{hash: k.Hash, scripts: waitingOn}
	loss.acquire.Store(2)
	first := newRlock(t, loss.client(node.Client(t))).FairMutex(name)
	gotFirst := lockIn(t, first)
	redistest.Eventually(t, "both replies lost, the waiter queued", func(context.Context) error {
		if n := loss.lost.Load(); n != 2 {
			return fmt.Errorf("%d replies lost", n)
		}
		return redistest.Exactly("queued", len(redistest.Queued(t, raw, k)), 1)
	})
	second := newRlock(t, node.Client(t)).FairMutex(name)
	gotSecond := lockIn(t, second)
	redistest.WaitQueued(t, raw, k, 2) // the second waiter queued

	require.NoError(t, holder.Unlock(held))
	var ctx context.Context
	select {
	case ctx = <-gotFirst:
	case <-gotSecond:
		t.Fatal("the waiter queued second took the lock first")
	case <-time.After(5 * time.Second):
		t.Fatal("no handoff")
	}
	n, err := first.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "handed over once")
	require.NoError(t, first.Unlock(ctx))
	select {
	case ctx = <-gotSecond:
		require.NoError(t, second.Unlock(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("no handoff to the second waiter")
	}
	assert.Empty(t, redistest.Queued(t, raw, k))
	assert.False(t, keyExists(t, raw, k.Hash), "the lock is free")
}

// TestFaultFairLostHandOverReply loses the reply of the final Unlock that
// handed the lock over: the resend, which finds the holder gone, is not
// applied again, the Unlock succeeds, and the waiter holds the lock once.
func TestFaultFairLostHandOverReply(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := fairKeys(name)
	loss := &replyLoss{hash: k.Hash, scripts: scriptOn}
	holder := newRlock(t, loss.client(node.Client(t))).FairMutex(name)
	held, err := holder.Lock(t.Context())
	require.NoError(t, err)
	waiter := newRlock(t, node.Client(t)).FairMutex(name)
	got := lockIn(t, waiter)
	redistest.WaitQueued(t, raw, k, 1) // the waiter queued

	loss.release.Store(1)
	require.NoError(t, holder.Unlock(held), "an Unlock whose reply was lost")
	require.EqualValues(t, 1, loss.lost.Load())
	assert.ErrorIs(t, held.Err(), context.Canceled)
	assert.NotErrorIs(t, context.Cause(held), rlock.ErrLockLost, "an Unlock is not a loss")
	select {
	case ctx := <-got:
		n, err := waiter.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.ErrorIs(t, holder.Unlock(held), rlock.ErrNotHeld, "the old holder has nothing left")
		require.NoError(t, waiter.Unlock(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the lock was not handed over")
	}
	assert.False(t, keyExists(t, raw, k.Hash), "the lock is free")
}
