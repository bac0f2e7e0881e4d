package redistest

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlock/rlock/internal/redisserver"
)

// KillMaster kills the master that serves slot, as a crash would, and
// returns once another node, its replica, serves the slot and every live
// node says cluster_state:ok; then it restarts the killed node, which
// rejoins under its old node ID, empty, as a replica of the new master, and
// waits until it is in sync. Holds the replica had not received are lost.
// It returns the index in Nodes of the new master.
func (c *Cluster) KillMaster(ctx context.Context, slot uint16) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	old, err := c.MasterOf(ctx, slot)
	if err != nil {
		return -1, err
	}
	if err := c.nodes[old].Kill(ctx); err != nil {
		return -1, fmt.Errorf("redistest: kill master %s: %w", c.nodes[old].Addr(), err)
	}
	next := -1
	err = redisserver.Poll(ctx, func(ctx context.Context) error {
		if next, err = c.MasterOf(ctx, slot); err != nil {
			return err
		}
		if next == old {
			return fmt.Errorf("slot %d is still served by the killed %s", slot, c.nodes[old].Addr())
		}
		return c.healthy(ctx, old)
	})
	if err != nil {
		return -1, fmt.Errorf("redistest: failover of slot %d: %w", slot, err)
	}
	if err := c.nodes[old].Restart(ctx); err != nil {
		return -1, fmt.Errorf("redistest: restart %s: %w", c.nodes[old].Addr(), err)
	}
	if err := redisserver.Poll(ctx, func(ctx context.Context) error { return linkUp(ctx, c.nodes[old].admin) }); err != nil {
		return -1, fmt.Errorf("redistest: %s did not rejoin as a replica: %w", c.nodes[old].Addr(), err)
	}
	return next, nil
}

// healthy reports why not every node but skip says cluster_state:ok.
func (c *Cluster) healthy(ctx context.Context, skip int) error {
	for i, m := range c.nodes {
		if i == skip {
			continue
		}
		info, err := m.admin.Do(ctx, m.admin.B().ClusterInfo().Build()).ToString()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok\r\n") {
			return fmt.Errorf("%s: cluster_state is not ok", m.Addr())
		}
	}
	return nil
}
