package integration

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// cancellation is what a cancelInFlight client does to the next acquire on
// its lock.
type cancellation struct {
	cancel context.CancelFunc // the caller's context
	sent   bool               // the acquire runs in Redis before the cancel
}

// cancelInFlight returns a client on rc that, while armed, cancels the
// caller's context during the next acquire on the lock at hash, after the
// script ran in Redis or before it was sent, and fails as rueidis does when
// a context ends before the reply arrives: the caller cannot tell whether
// it was granted a level.
func cancelInFlight(rc rueidis.Client, hash string, armed *atomic.Pointer[cancellation]) *hookClient {
	return &hookClient{Client: rc, hook: func(ctx context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		if scriptOn(cmd, hash) != acquireScript || armed.Load() == nil {
			return run()
		}
		if armed.Load().sent {
			if res := run(); !ran(res) {
				return res
			}
		}
		armed.Swap(nil).cancel()
		return rueidis.NewErrorResult(ctx.Err())
	}}
}

// TestFaultCancelDuringAcquire cancels Lock while the acquire is in flight:
// Lock must fail with context.Canceled and settle the request before it
// returns, giving back any level it was granted. After the script ran, on a
// first acquire, that frees the lock; on a re-entry it leaves the outer
// level, and its lock context, alone. Before the request reached Redis,
// settling takes a level and gives it back, which leaves the lock free too.
func TestFaultCancelDuringAcquire(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	var armed atomic.Pointer[cancellation]
	mu := newRlock(t, cancelInFlight(node.Client(t), lockKeys(name).Hash, &armed)).Mutex(name)

	for _, sent := range []bool{true, false} {
		ctx, cancel := context.WithCancel(t.Context())
		armed.Store(&cancellation{cancel: cancel, sent: sent})
		_, err := mu.Lock(ctx)
		require.ErrorIs(t, err, context.Canceled, "Lock reports its cancelled context (sent: %v)", sent)
		require.Nil(t, armed.Load(), "the hook cancelled the acquire")
		assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "no level is left to the cancelled Lock (sent: %v)", sent)
	}

	outer, err := mu.Lock(t.Context())
	require.NoError(t, err)
	ictx, icancel := context.WithCancel(outer)
	armed.Store(&cancellation{cancel: icancel, sent: true})
	_, err = mu.Lock(ictx)
	require.ErrorIs(t, err, context.Canceled, "re-entry reports its cancelled context")
	require.Nil(t, armed.Load(), "the hook cancelled the re-entry")
	assertHoldCount(t, outer, mu, 1)
	require.NoError(t, outer.Err(), "the outer hold lives on")

	require.NoError(t, mu.Unlock(outer))
	assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "one Unlock frees the lock")
}
