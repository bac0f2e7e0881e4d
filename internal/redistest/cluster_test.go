package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/slot"
)

// TestCluster spreads keys over every master of a cluster, then moves one
// key's slot and reads the key through the same client.
func TestCluster(t *testing.T) {
	c := NewCluster(t, ClusterConfig{})
	require.Len(t, c.Addrs(), DefaultClusterMasters)
	rc := c.Client(t)
	require.Equal(t, rueidis.ClientModeCluster, rc.Mode())
	ctx := t.Context()

	keyOf := map[int]string{} // master index → a key it serves
	for i := 0; len(keyOf) < DefaultClusterMasters && i < 1000; i++ {
		key := fmt.Sprintf("redistest:cluster:%s:%d", t.Name(), i)
		m, err := c.MasterOf(ctx, slot.Of(key))
		require.NoError(t, err)
		if _, ok := keyOf[m]; !ok {
			keyOf[m] = key
		}
	}
	require.Len(t, keyOf, DefaultClusterMasters, "keys land on every master")
	for m, key := range keyOf {
		require.NoError(t, rc.Do(ctx, rc.B().Set().Key(key).Value(key).Build()).Error())
		assert.Equal(t, key, get(t, rc, key), "the cluster client reads back %s", key)
		assert.Equal(t, key, get(t, direct(t, c.Nodes()[m]), key), "%s is stored on master %d, which MasterOf named", key, m)
	}

	key := keyOf[0]
	s := slot.Of(key)
	require.NoError(t, c.MigrateSlot(ctx, s, 1))
	m, err := c.MasterOf(ctx, s)
	require.NoError(t, err)
	require.Equal(t, 1, m, "slot %d is served by master 1 after MigrateSlot", s)
	assert.Equal(t, key, get(t, direct(t, c.Nodes()[1]), key), "the key moved with its slot")
	start := time.Now()
	assert.Equal(t, key, get(t, rc, key), "the cluster client follows MOVED to the new master")
	t.Logf("read after migration took %v", time.Since(start))
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(key).Value("again").Build()).Error())
	assert.Equal(t, "again", get(t, direct(t, c.Nodes()[1]), key), "writes go to the new master")
	require.NoError(t, c.MigrateSlot(ctx, s, 1), "migrating a slot to its owner does nothing")
}

// TestClusterReplicas checks that each master gets its replicas, in the
// order Nodes promises.
func TestClusterReplicas(t *testing.T) {
	c := NewCluster(t, ClusterConfig{Masters: 3, ReplicasPerMaster: 1})
	nodes := c.Nodes()
	require.Len(t, nodes, 6)
	ctx := t.Context()
	for i, n := range nodes[3:] {
		nc := direct(t, n)
		role, err := nc.Do(ctx, nc.B().Role().Build()).ToArray()
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(role), 4)
		kind, _ := role[0].ToString()
		host, _ := role[1].ToString()
		port, _ := role[2].AsInt64()
		state, _ := role[3].ToString()
		assert.Equal(t, "slave", kind, "node %d is a replica", 3+i)
		assert.Equal(t, nodes[i].Addr(), fmt.Sprintf("%s:%d", host, port), "node %d replicates master %d", 3+i, i)
		assert.Equal(t, "connected", state, "node %d is in sync", 3+i)
	}
	rc := c.Client(t)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key("redistest:cluster:replicas").Value("v").Build()).Error())
}

// direct returns a client of exactly n, closed when t ends.
func direct(t *testing.T, n *Node) rueidis.Client {
	t.Helper()
	rc, err := adminClient(n.Addr())
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return rc
}

// get reads key through rc, within a generous bound.
func get(t *testing.T, rc rueidis.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	v, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString()
	require.NoError(t, err)
	return v
}
