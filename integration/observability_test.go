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
	"github.com/rlock/rlock/rlock/hooktest"
)

// TestInspectAndReplicaAckOnCluster inspects locks on every master of a
// Cluster, each with a waiter subscribed through sharded pub/sub, and sees
// the hooks report each acquire's replica acknowledgement.
func TestInspectAndReplicaAckOnCluster(t *testing.T) {
	if redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a Cluster it starts")
	}
	cl := redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
	hooks := &hooktest.Recorder{}
	c := newRlock(t, cl.Client(t), rlock.WithReplicaAck(1, time.Second), rlock.WithHooks(hooks))
	other := newRlock(t, cl.Client(t))
	const locks = 6
	for i := range locks {
		name := fmt.Sprintf("%s:%d", redistest.LockName(t), i)
		mu := c.Mutex(name)
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err)
		token, _ := mu.FencingToken(ctx)

		wctx, cancel := context.WithCancel(t.Context())
		waited := make(chan error, 1)
		go func() {
			_, err := other.Mutex(name).Lock(wctx)
			waited <- err
		}()
		var st rlock.LockState
		require.Eventually(t, func() bool {
			st, err = c.Inspect(t.Context(), name)
			return err == nil && st.Subscribers == 1
		}, 10*time.Second, 10*time.Millisecond, "%s: the waiter's sharded subscription shows", name)
		require.Len(t, st.Holders, 1, name)
		assert.True(t, st.Holders[0].Local, name)
		assert.Equal(t, 1, st.Holders[0].Count, name)
		assert.Equal(t, token, st.FencingToken, name)
		assert.Positive(t, st.Lease, name)

		cancel()
		require.ErrorIs(t, <-waited, context.Canceled)
		require.NoError(t, mu.Unlock(ctx))
		st, err = c.Inspect(t.Context(), name)
		require.NoError(t, err)
		assert.Equal(t, "none", st.Type, "%s: free", name)
	}
	acks := hooks.Balanced(t).Acks
	require.Len(t, acks, locks, "one acknowledgement per acquire")
	for _, a := range acks {
		assert.Equal(t, 1, a.Wanted)
		assert.Equal(t, 1, a.Acked)
		assert.Positive(t, a.Duration)
		assert.Equal(t, "mutex", a.Kind)
	}
}
