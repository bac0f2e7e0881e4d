package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFaultRWLostReplies loses, after each ran, the replies of an RWMutex's
// requests: a first RLock and a re-entry, the RUnlocks, a waiting writer's
// refused attempts that left its mark, and a final write Unlock. Every
// request applies once: counts are what was asked, the writer that gave
// up leaves no mark for a late copy to restore, and at the end nothing is
// left in Redis.
func TestFaultRWLostReplies(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := rwKeys(name)
	loss := &replyLoss{hash: k.Hash}
	rw := newRlock(t, loss.client(node.Client(t))).RWMutex(name)

	loss.acquire.Store(1)
	rctx, err := rw.RLock(t.Context())
	require.NoError(t, err, "RLock whose first reply was lost")
	loss.acquire.Store(1)
	inner, err := rw.RLock(rctx)
	require.NoError(t, err, "re-entry whose first reply was lost")
	require.EqualValues(t, 2, loss.lost.Load(), "both acquires ran and lost their replies")
	n, err := rw.RHoldCount(rctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "read hold count")

	// A writer of another Client waits, and every reply to its waiting
	// attempts, which leave its mark, is lost after they ran: it gives up
	// with the transport error, and the settling release fences the lost
	// calls and takes the mark back.
	var marked int
	lossy := &hookClient{Client: node.Client(t), hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		if waitingOn(cmd, k.Hash) != acquireScript {
			return run()
		}
		if res := run(); !ran(res) {
			return res
		}
		marked++
		return lostReply()
	}}
	writer := newRlock(t, lossy, rlock.WithRetryTimeout(200*time.Millisecond)).RWMutex(name)
	_, ok, err := writer.TryLock(t.Context(), time.Second, 0)
	require.Error(t, err, "the writer's waiting attempts never got a reply")
	assert.False(t, ok)
	require.Positive(t, marked, "waiting attempts ran")
	assert.Empty(t, waitMarks(t, raw, k.Hash), "the writer that gave up left no mark")
	other := newRlock(t, raw).RWMutex(name)
	octx, ok, err := other.TryRLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "a new reader reads at once")
	require.NoError(t, other.RUnlock(octx))

	loss.release.Store(2)
	require.NoError(t, rw.RUnlock(inner), "RUnlock whose reply was lost")
	require.NoError(t, rw.RUnlock(rctx), "final RUnlock whose reply was lost")
	require.EqualValues(t, 4, loss.lost.Load())
	assert.ErrorIs(t, rctx.Err(), context.Canceled, "the final RUnlock ends the read context")

	wctx, err := rw.Lock(t.Context())
	require.NoError(t, err)
	loss.release.Store(1)
	require.NoError(t, rw.Unlock(wctx), "final Unlock whose reply was lost")
	assert.NotErrorIs(t, context.Cause(wctx), rlock.ErrLockLost, "an Unlock is not a loss")
	assert.False(t, keyExists(t, raw, k.Hash), "the lock is free, with no mark left")
}

// waitMarks lists the waiting marks in the read-write lock's hash.
func waitMarks(t *testing.T, rc rueidis.Client, hash string) []string {
	t.Helper()
	fields, err := rc.Do(t.Context(), rc.B().Hkeys().Key(hash).Build()).AsStrSlice()
	require.NoError(t, err)
	var out []string
	for _, f := range fields {
		if strings.HasSuffix(f, "#wait") || strings.HasSuffix(f, "#admit") {
			out = append(out, f)
		}
	}
	return out
}
