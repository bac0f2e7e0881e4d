package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redisserver"
	"github.com/rlock/rlock/internal/redistest"
)

// TestClusterLocksSingleNode: a one-node Cluster that no peer ever told
// its own IP (made with CLUSTER ADDSLOTSRANGE, no cluster-announce-ip)
// names its master in CLUSTER SLOTS with an empty IP, which rueidis reads
// as the address it dialled: Locks walks it, as it did before it looked
// for masters rueidis lacks (it waited for ":<port>", and failed).
func TestClusterLocksSingleNode(t *testing.T) {
	ctx := t.Context()
	srv, err := redisserver.StartProcess(ctx, redisserver.Launcher{}, "", []string{
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	admin := nodeAdmin(t, srv.Addr())
	require.NoError(t, admin.Do(ctx, admin.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(0, 16383).Build()).Error())
	redistest.Eventually(t, "the one-node Cluster serves", func(ctx context.Context) error {
		info, err := admin.Do(ctx, admin.B().ClusterInfo().Build()).ToString()
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("CLUSTER INFO: %s", info)
		}
		return err
	})

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	require.Equal(t, rueidis.ClientModeCluster, rc.Mode())
	c := newRlock(t, rc)
	name := redistest.LockName(t)
	mu := c.Mutex(name)
	lctx, err := mu.Lock(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, mu.Unlock(lctx)) }()
	found := false
	for st, err := range c.Locks(ctx, name) {
		require.NoError(t, err)
		found = found || st.Name == name
	}
	require.True(t, found, "Locks yields the held lock")
}
