package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
	"github.com/rlock/rlock/rlock"
)

// ackTimeout is how long an acquire waits for a replica's acknowledgement.
const ackTimeout = 300 * time.Millisecond

// TestReplicaAck: with WithReplicaAck, an acquire that the replica
// acknowledged holds the lock; while the replica lags (paused), an acquire
// fails with ErrNotReplicated and leaves no lock behind.
func TestReplicaAck(t *testing.T) {
	if len(redistest.Backends(t)) > 0 && redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a master and a replica it controls")
	}
	sen := redistest.NewSentinel(t, redistest.SentinelConfig{})
	rc := sen.Client(t)
	c := newRlock(t, rc, rlock.WithReplicaAck(1, ackTimeout))
	mu := c.Mutex(redistest.LockName(t))

	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err, "an acquire the replica acknowledged")
	inner, err := mu.Lock(ctx)
	require.NoError(t, err, "a re-entry the replica acknowledged")
	require.NoError(t, mu.Unlock(inner))
	require.NoError(t, mu.Unlock(ctx))

	replica := sen.Nodes()[1]
	require.NoError(t, replica.Pause(t.Context()))
	_, ok, err := mu.TryLock(t.Context(), 0, 0)
	require.NoError(t, replica.Resume(t.Context()))
	assert.False(t, ok)
	assert.ErrorIs(t, err, rlock.ErrNotReplicated, "an acquire no replica acknowledged fails")
	locked, err := mu.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "and gives the lock back")

	ctx, err = mu.Lock(t.Context())
	require.NoError(t, err, "acquires work again once the replica caught up")
	require.NoError(t, mu.Unlock(ctx))
}

// TestReplicaAckWithoutReplicas: a master with no replica can never
// acknowledge, so every acquire fails cleanly.
func TestReplicaAckWithoutReplicas(t *testing.T) {
	c := newRlock(t, redistest.Shared(t).Client(t), rlock.WithReplicaAck(1, 50*time.Millisecond))
	_, err := c.Mutex(redistest.LockName(t)).Lock(t.Context())
	assert.ErrorIs(t, err, rlock.ErrNotReplicated)
}

// TestSentinelFailoverLosesLocks measures how many held locks a Sentinel
// failover loses, with and without WithReplicaAck. Half the locks are taken
// while the replica lags (paused); then the master is killed and the
// replica promoted, so whatever it had not received is gone. Without
// acknowledgement those locks were granted and are lost (and the watchdog
// tells their holders); with it they were refused, and nothing is lost.
func TestSentinelFailoverLosesLocks(t *testing.T) {
	if redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a Sentinel setup it controls")
	}
	for _, acked := range []bool{false, true} {
		t.Run(fmt.Sprintf("ack=%v", acked), func(t *testing.T) {
			const perPhase = 50
			// Longer than the failover takes (about 3 s here): a failover
			// that outlasts the lease loses every lock, acknowledged or not.
			const lease = 10 * time.Second
			sen := redistest.NewSentinel(t, redistest.SentinelConfig{})
			opts := []rlock.Option{rlock.WithLeaseTime(lease)}
			if acked {
				opts = append(opts, rlock.WithReplicaAck(1, ackTimeout))
			}
			raw := sen.Client(t) // probes the promoted replica; made while a master answers
			c := newRlock(t, sen.Client(t), opts...)

			holds := takeLocks(t, c, "synced", perPhase)
			require.Len(t, holds, perPhase, "locks taken while the replica keeps up")
			master, replica := sen.Nodes()[0], sen.Nodes()[1]
			// The replica lags: frozen, with its replication link cut, so
			// what the master writes now cannot reach it (on loopback,
			// bytes already sent would wait in its socket for the resume).
			require.NoError(t, replica.Pause(t.Context()))
			admin := master.Client(t)
			require.NoError(t, admin.Do(t.Context(), admin.B().ClientKill().TypeReplica().Build()).Error())
			lagging := takeLocks(t, c, "lagging", perPhase)
			require.NoError(t, master.Kill(t.Context()))
			require.NoError(t, replica.Resume(t.Context()))
			for name, ctx := range lagging {
				holds[name] = ctx
			}

			// Wait for the promoted replica to serve writes (it has no
			// replica of its own now, so an acknowledged acquire would not
			// do as a probe), then count what it has.
			require.Eventually(t, func() bool {
				return raw.Do(t.Context(), raw.B().Set().Key("probe").Value("1").Build()).Error() == nil
			}, 30*time.Second, 100*time.Millisecond, "the promoted replica serves writes")
			lost := 0
			for name, ctx := range holds {
				n, err := c.Mutex(name).HoldCount(ctx)
				require.NoError(t, err)
				if n == 0 {
					lost++
					select {
					case <-ctx.Done():
						assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
					case <-time.After(2 * lease):
						t.Errorf("lock %s was lost in the failover and its holder was not told", name)
					}
				}
			}
			t.Logf("ack=%v: %d locks held at the failover (%d taken while the replica lagged), %d lost",
				acked, len(holds), len(lagging), lost)
			if acked {
				assert.Empty(t, lagging, "no acquire succeeds that the replica did not acknowledge")
				assert.Zero(t, lost, "with replica acknowledgement no held lock is lost")
			} else {
				assert.Len(t, lagging, perPhase, "without acknowledgement acquires succeed while the replica lags")
				assert.Equal(t, perPhase, lost, "exactly the unreplicated locks are lost")
			}
		})
	}
}

// takeLocks tries, at once and concurrently, to take n locks named after
// phase, and returns the lock contexts of those it took.
func takeLocks(t *testing.T, c *rlock.Client, phase string, n int) map[string]context.Context {
	t.Helper()
	var mu sync.Mutex
	out := map[string]context.Context{}
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("%s:%s:%d", redistest.LockName(t), phase, i)
		wg.Go(func() {
			ctx, ok, err := c.Mutex(name).TryLock(t.Context(), 0, 0)
			if err != nil {
				assert.ErrorIs(t, err, rlock.ErrNotReplicated, "lock %s", name)
				return
			}
			if assert.True(t, ok, "lock %s is free", name) {
				mu.Lock()
				out[name] = ctx
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// TestReplicaAckOnCluster: on a Cluster with a replica per master, the
// acquire and its WAIT go to the master of each lock's slot, for locks on
// every master.
func TestReplicaAckOnCluster(t *testing.T) {
	if redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a Cluster it starts")
	}
	cl := redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
	c := newRlock(t, cl.Client(t), rlock.WithReplicaAck(1, time.Second))
	masters := map[int]bool{}
	for i := range 12 {
		name := fmt.Sprintf("%s:%d", redistest.LockName(t), i)
		owner, err := cl.MasterOf(t.Context(), slot.Of(lockKeys(name).Hash))
		require.NoError(t, err)
		masters[owner] = true
		ctx, err := c.Mutex(name).Lock(t.Context())
		require.NoError(t, err, "lock %s on master %d", name, owner)
		require.NoError(t, c.Mutex(name).Unlock(ctx))
	}
	assert.Len(t, masters, 3, "the locks spread over every master")
}
