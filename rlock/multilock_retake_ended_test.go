package rlock_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestRedLockNoRetakeAfterQuorumLost: once a RedLock's hold has
// ended (fewer parts than the quorum), nothing renews a part of it any
// more: a retake of a lost part that was under way when the quorum was
// lost must not leave that node held and renewed for the ended hold. Here
// node 0's part is forced away and its retake is in flight (node 0's link
// is slow) when node 1's part is forced away too: the quorum is lost.
// Three leases later, no node may still hold the lock (nobody took it).
func TestRedLockNoRetakeAfterQuorumLost(t *testing.T) {
	const lease = 2 * time.Second // node timeout 200 ms
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	proxy := ms.nodes[0].Proxy(t)
	slow, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{proxy.Addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(slow.Close)
	mutexes := ms.mutexes(t, name, rlock.WithLeaseTime(lease))
	mutexes[0] = newRlock(t, slow, rlock.WithLeaseTime(lease)).Mutex(name)
	rl := rlock.NewRedLock(mutexes...)

	ctx, err := rl.Lock(t.Context())
	require.NoError(t, err)
	proxy.Delay(60 * time.Millisecond) // a round trip to node 0 takes about 120 ms

	_, err = mutexes[0].ForceUnlock(t.Context()) // node 0's part ends; its retake begins at once
	require.NoError(t, err)
	time.Sleep(40 * time.Millisecond) // the retake's acquire is on its way to node 0
	_, err = mutexes[1].ForceUnlock(t.Context())
	require.NoError(t, err)
	receive(t, ctx.Done(), "the RedLock's context ends with its quorum")

	time.Sleep(3 * lease)
	k := lockKeys(name)
	for i, rc := range ms.raw {
		n, err := rc.Do(t.Context(), rc.B().Exists().Key(k.Hash).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "node %d still holds the lock three leases after the RedLock's hold ended (fields %v)", i, partFields(t, rc, name))
	}
	_ = rl.Unlock(ctx)
}
