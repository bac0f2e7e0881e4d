package redistest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redisserver"
	"github.com/rlock/rlock/internal/slot"
)

// DefaultClusterMasters is the number of masters of a ClusterConfig that
// names none.
const DefaultClusterMasters = 3

// ClusterNodeTimeout is the cluster-node-timeout of every cluster node:
// short, so that a killed or paused master is failed over to its replica
// within a few seconds. A "--cluster-node-timeout" in ClusterConfig.Args
// overrides it.
const ClusterNodeTimeout = time.Second

// ClusterConfig says how to start a Cluster.
type ClusterConfig struct {
	// Masters is the number of masters, which share the 16384 slots in
	// even, contiguous ranges; 0 means DefaultClusterMasters.
	Masters int
	// ReplicasPerMaster is the number of replicas each master gets; 0 by
	// default.
	ReplicasPerMaster int
	// Args are extra redis-server arguments for every node.
	Args []string
}

// Cluster is a Redis Cluster of redis-server child processes on loopback,
// formed as redis-cli --cluster create would form it, with the means to
// move slots between its masters.
type Cluster struct {
	nodes     []member // masters first, then the replicas of master 0, of master 1, …
	masters   int
	perMaster int      // replicas per master
	ids       []string // cluster node ID of each node, kept in nodes.conf across Restart
}

// migrateBatch is how many keys MigrateSlot moves per MIGRATE.
const migrateBatch = 100

// migrateTimeout is the MIGRATE timeout: how long the source may wait on
// the target for each batch.
const migrateTimeout = 5 * time.Second

// StartCluster starts a Redis Cluster as cfg says and returns once every
// node agrees on the slot map and every replica is in sync. The caller must
// Close it.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	masters := cmp.Or(cfg.Masters, DefaultClusterMasters)
	if masters < 0 || cfg.ReplicasPerMaster < 0 {
		return nil, fmt.Errorf("redistest: no cluster has %d masters with %d replicas each", masters, cfg.ReplicasPerMaster)
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	args := slices.Concat([]string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf", // in the node's own directory
		"--cluster-node-timeout", strconv.FormatInt(ClusterNodeTimeout.Milliseconds(), 10),
		"--cluster-announce-ip", "127.0.0.1",
	}, replicationArgs, cfg.Args)
	c := &Cluster{masters: masters, perMaster: cfg.ReplicasPerMaster}
	for range masters * (1 + cfg.ReplicasPerMaster) {
		m, err := startMember(ctx, "", args)
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		c.nodes = append(c.nodes, m)
	}
	if err := c.form(ctx); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// NewCluster starts a Redis Cluster for t as cfg says, logs its addresses,
// and stops it when t ends. It fails t if the cluster cannot be formed.
func NewCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	c, err := StartCluster(t.Context(), cfg)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Logf("redistest: cluster of masters %v and replicas %v (process backend)", c.Addrs(), c.addrs(c.masters, len(c.nodes)))
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("redistest: stop cluster: %v", err)
		}
	})
	return c
}

// Addrs returns the addresses of the masters the cluster was formed with.
func (c *Cluster) Addrs() []string { return c.addrs(0, c.masters) }

func (c *Cluster) addrs(from, to int) []string {
	out := make([]string, 0, to-from)
	for _, m := range c.nodes[from:to] {
		out = append(out, m.Addr())
	}
	return out
}

// Nodes returns every node: the masters first, in the order of Addrs, then
// the replicas of the first master, of the second, and so on. A killed and
// restarted node rejoins the cluster under its old node ID, without data.
func (c *Cluster) Nodes() []*Node {
	out := make([]*Node, len(c.nodes))
	for i, m := range c.nodes {
		out[i] = m.Node
	}
	return out
}

// NewClient returns a rueidis cluster client seeded with every master's
// address; the caller closes it.
func (c *Cluster) NewClient() (rueidis.Client, error) {
	return newModeClient(ClusterClientOption(c.Addrs()), rueidis.ClientModeCluster, "cluster")
}

// ClusterClientOption is how the harness's cluster clients connect, seeded
// with the masters at addrs: what NewClient uses, for clients made in other
// processes.
func ClusterClientOption(addrs []string) rueidis.ClientOption {
	opt := ClientOption(addrs[0])
	opt.InitAddress = addrs
	return opt
}

// Client returns a rueidis cluster client, closed when t ends.
func (c *Cluster) Client(t testing.TB) rueidis.Client {
	t.Helper()
	return testClient(t, c.NewClient)
}

// Close stops every node.
func (c *Cluster) Close() error {
	errs := make([]error, 0, len(c.nodes))
	for _, m := range c.nodes {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

// MasterOf returns the index in Nodes of the master that serves slot, as
// the first node to answer sees it. Until a replica is promoted that is
// also the master's index in Addrs.
func (c *Cluster) MasterOf(ctx context.Context, slot uint16) (int, error) {
	ranges, err := c.view(ctx)
	if err != nil {
		return -1, err
	}
	return ownerOf(ranges, slot)
}

// MigrateSlot moves slot, with its keys, from the master that serves it to
// the master at index to in Nodes, by the sequence redis-cli --cluster
// reshard uses: the target imports, the source migrates, MIGRATE moves the
// keys in batches, then the target, the source and every other master are
// told the slot's new owner. Meanwhile clients are sent ASK for keys already
// moved; afterwards the source answers MOVED.
func (c *Cluster) MigrateSlot(ctx context.Context, slot uint16, to int) error {
	if to < 0 || to >= len(c.nodes) {
		return fmt.Errorf("redistest: no node %d in a cluster of %d", to, len(c.nodes))
	}
	ranges, err := c.view(ctx)
	if err != nil {
		return err
	}
	from, err := ownerOf(ranges, slot)
	if err != nil || from == to {
		return err
	}
	src, dst, s := c.nodes[from].admin, c.nodes[to].admin, int64(slot)
	steps := []struct {
		rc  rueidis.Client
		cmd rueidis.Completed
	}{
		{dst, dst.B().ClusterSetslot().Slot(s).Importing().NodeId(c.ids[from]).Build()},
		{src, src.B().ClusterSetslot().Slot(s).Migrating().NodeId(c.ids[to]).Build()},
	}
	for _, st := range steps {
		if err := st.rc.Do(ctx, st.cmd).Error(); err != nil {
			return fmt.Errorf("redistest: migrate slot %d from node %d to %d: %w", slot, from, to, err)
		}
	}
	if err := c.moveKeys(ctx, slot, from, to); err != nil {
		return err
	}
	// The target first, so that it owns the slot before the source sends
	// clients there; the other masters would learn it by gossip, later.
	owners := []int{to, from}
	for _, r := range ranges {
		if !slices.Contains(owners, r.master) {
			owners = append(owners, r.master)
		}
	}
	for _, i := range owners {
		rc := c.nodes[i].admin
		if err := rc.Do(ctx, rc.B().ClusterSetslot().Slot(s).Node().NodeId(c.ids[to]).Build()).Error(); err != nil {
			return fmt.Errorf("redistest: give slot %d to node %d, told to node %d: %w", slot, to, i, err)
		}
	}
	return nil
}

// moveKeys MIGRATEs the keys of slot from node from to node to until none
// is left.
func (c *Cluster) moveKeys(ctx context.Context, slot uint16, from, to int) error {
	host, port, err := hostPort(c.nodes[to].Addr())
	if err != nil {
		return err
	}
	src := c.nodes[from].admin
	for {
		keys, err := src.Do(ctx, src.B().ClusterGetkeysinslot().Slot(int64(slot)).Count(migrateBatch).Build()).AsStrSlice()
		if err != nil || len(keys) == 0 {
			return err
		}
		cmd := src.B().Migrate().Host(host).Port(port).Key("").DestinationDb(0).Timeout(migrateTimeout.Milliseconds()).Keys(keys...).Build()
		if err := src.Do(ctx, cmd).Error(); err != nil {
			return fmt.Errorf("redistest: migrate keys of slot %d from node %d to %d: %w", slot, from, to, err)
		}
	}
}

// slotRange is one entry of CLUSTER SLOTS, with nodes named by their index
// in Cluster.nodes.
type slotRange struct {
	lo, hi   uint16
	master   int
	replicas []int // ascending
}

// ownerOf returns the master that ranges assign slot to.
func ownerOf(ranges []slotRange, slot uint16) (int, error) {
	for _, r := range ranges {
		if r.lo <= slot && slot <= r.hi {
			return r.master, nil
		}
	}
	return -1, fmt.Errorf("redistest: slot %d is served by no node", slot)
}

// view returns the slot map as the first node to answer sees it, asking
// the masters first.
func (c *Cluster) view(ctx context.Context) ([]slotRange, error) {
	var errs []error
	for i := range c.nodes {
		ranges, err := c.slots(ctx, i)
		if err == nil {
			return ranges, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// slots returns node i's CLUSTER SLOTS, sorted by slot.
func (c *Cluster) slots(ctx context.Context, i int) ([]slotRange, error) {
	rc := c.nodes[i].admin
	entries, err := rc.Do(ctx, rc.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("redistest: CLUSTER SLOTS of %s: %w", c.nodes[i].Addr(), err)
	}
	ranges := make([]slotRange, 0, len(entries))
	for _, e := range entries {
		r, err := c.parseRange(e)
		if err != nil {
			return nil, fmt.Errorf("redistest: CLUSTER SLOTS of %s: %w", c.nodes[i].Addr(), err)
		}
		ranges = append(ranges, r)
	}
	slices.SortFunc(ranges, func(a, b slotRange) int { return cmp.Compare(a.lo, b.lo) })
	return ranges, nil
}

// parseRange reads one CLUSTER SLOTS entry: first slot, last slot, then
// the master and its replicas, each as [ip, port, id, …].
func (c *Cluster) parseRange(e rueidis.RedisMessage) (slotRange, error) {
	fields, err := e.ToArray()
	if err != nil {
		return slotRange{}, err
	}
	if len(fields) < 3 {
		return slotRange{}, fmt.Errorf("entry of %d fields", len(fields))
	}
	lo, err1 := fields[0].AsInt64()
	hi, err2 := fields[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return slotRange{}, err
	}
	r := slotRange{lo: uint16(lo), hi: uint16(hi)}
	for j, f := range fields[2:] {
		node, err := f.ToArray()
		if err != nil || len(node) < 2 {
			return slotRange{}, fmt.Errorf("node entry %v: %v", f, err)
		}
		ip, err1 := node[0].ToString()
		port, err2 := node[1].AsInt64()
		if err := errors.Join(err1, err2); err != nil {
			return slotRange{}, err
		}
		addr := net.JoinHostPort(ip, strconv.FormatInt(port, 10))
		k := slices.IndexFunc(c.nodes, func(m member) bool { return m.Addr() == addr })
		if k < 0 {
			return slotRange{}, fmt.Errorf("%s is not a node of this cluster", addr)
		}
		if j == 0 {
			r.master = k
		} else {
			r.replicas = append(r.replicas, k)
		}
	}
	slices.Sort(r.replicas)
	return r, nil
}

// form makes the started nodes one cluster: distinct config epochs and an
// even share of the slots for the masters, a CLUSTER MEET of the first node
// by every other, then CLUSTER REPLICATE for each replica, and it waits
// until the cluster has settled.
func (c *Cluster) form(ctx context.Context) error {
	c.ids = make([]string, len(c.nodes))
	for i, m := range c.nodes {
		id, err := m.admin.Do(ctx, m.admin.B().ClusterMyid().Build()).ToString()
		if err != nil {
			return fmt.Errorf("redistest: CLUSTER MYID of %s: %w", m.Addr(), err)
		}
		c.ids[i] = id
	}
	for i, r := range c.layout() {
		rc := c.nodes[i].admin
		for _, res := range rc.DoMulti(ctx,
			// Distinct epochs spare the masters a round of collision handling.
			rc.B().ClusterSetConfigEpoch().ConfigEpoch(int64(i+1)).Build(),
			rc.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(int64(r.lo), int64(r.hi)).Build(),
		) {
			if err := res.Error(); err != nil {
				return fmt.Errorf("redistest: assign slots %d-%d to %s: %w", r.lo, r.hi, c.nodes[i].Addr(), err)
			}
		}
	}
	host, port, err := hostPort(c.nodes[0].Addr())
	if err != nil {
		return err
	}
	for _, m := range c.nodes[1:] {
		if err := m.admin.Do(ctx, m.admin.B().ClusterMeet().Ip(host).Port(port).Build()).Error(); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET from %s: %w", m.Addr(), err)
		}
	}
	for i := c.masters; i < len(c.nodes); i++ {
		rc, master := c.nodes[i].admin, (i-c.masters)/c.perMaster
		// A replica can follow only a master it has heard of by gossip.
		err := redisserver.Poll(ctx, func(ctx context.Context) error {
			return rc.Do(ctx, rc.B().ClusterReplicate().NodeId(c.ids[master]).Build()).Error()
		})
		if err != nil {
			return fmt.Errorf("redistest: CLUSTER REPLICATE from %s: %w", c.nodes[i].Addr(), err)
		}
	}
	if err := redisserver.Poll(ctx, c.settled); err != nil {
		return fmt.Errorf("redistest: cluster did not settle: %w", err)
	}
	return nil
}

// layout is the slot map form makes: master i serves the i-th of equal,
// contiguous shares of the slots, replicated by its replicas.
func (c *Cluster) layout() []slotRange {
	out := make([]slotRange, c.masters)
	for i := range out {
		out[i] = slotRange{lo: uint16(i * slot.Count / c.masters), hi: uint16((i+1)*slot.Count/c.masters - 1), master: i}
		for j := range c.perMaster {
			out[i].replicas = append(out[i].replicas, c.masters+i*c.perMaster+j)
		}
	}
	return out
}

// settled reports why the cluster is not yet as form made it, or nil once
// every node says cluster_state:ok, knows every other node and maps the
// slots as layout says, and every replica is in sync with its master.
func (c *Cluster) settled(ctx context.Context) error {
	want := fmt.Sprint(c.layout())
	for i, m := range c.nodes {
		info, err := m.admin.Do(ctx, m.admin.B().ClusterInfo().Build()).ToString()
		if err != nil {
			return err
		}
		for _, line := range []string{"cluster_state:ok", fmt.Sprintf("cluster_known_nodes:%d", len(c.nodes))} {
			if !strings.Contains(info, line+"\r\n") {
				return fmt.Errorf("%s: CLUSTER INFO lacks %s", m.Addr(), line)
			}
		}
		ranges, err := c.slots(ctx, i)
		if err != nil {
			return err
		}
		if got := fmt.Sprint(ranges); got != want {
			return fmt.Errorf("%s: slot map %s, want %s", m.Addr(), got, want)
		}
		if i >= c.masters {
			if err := linkUp(ctx, m.admin); err != nil {
				return fmt.Errorf("%s: %w", m.Addr(), err)
			}
		}
	}
	return nil
}
