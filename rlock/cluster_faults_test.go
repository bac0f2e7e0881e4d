package rlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redisserver"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
	"github.com/rlock/rlock/rlock"
)

// TestClusterReplicaAckFollowsMovedSlot: with WithReplicaAck on a
// Cluster, a lock whose slot moved is still taken ("Slot migrations are
// followed"): migrated to another master, or failed over, WithReplicaAck's
// very purpose (the killed master is back as a replica at its old address,
// where the client's slot map still sends the slot, and answers MOVED).
// The acquire and its WAIT go through a dedicated connection (request.go
// execAcked), which rueidis does not redirect: on MOVED the request is
// resent once rueidis learnt the new node (the Lock failed with MOVED).
func TestClusterReplicaAckFollowsMovedSlot(t *testing.T) {
	for _, move := range []struct {
		name string
		move func(ctx context.Context, cl *redistest.Cluster, s uint16) error
	}{
		{"migrated", func(ctx context.Context, cl *redistest.Cluster, s uint16) error {
			from, err := cl.MasterOf(ctx, s)
			if err != nil {
				return err
			}
			return cl.MigrateSlot(ctx, s, (from+1)%redistest.DefaultClusterMasters)
		}},
		{"failed-over", func(ctx context.Context, cl *redistest.Cluster, s uint16) error {
			_, err := cl.KillMaster(ctx, s)
			return err
		}},
	} {
		t.Run(move.name, func(t *testing.T) {
			cl := redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
			c := newRlock(t, cl.Client(t), rlock.WithReplicaAck(1, 2*time.Second))
			name := redistest.LockName(t)
			s := slot.Of(lockKeys(name).Hash)
			mu := c.Mutex(name)

			// The client learns the slot map, and takes the lock once.
			lctx, err := mu.Lock(t.Context())
			require.NoError(t, err)
			require.NoError(t, mu.Unlock(lctx))

			require.NoError(t, move.move(t.Context(), cl, s))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			lctx, err = mu.Lock(ctx)
			require.NoError(t, err, "Lock after slot %d %s", s, move.name)
			require.NoError(t, mu.Unlock(lctx))
		})
	}
}

// TestClusterReplicaAckDoFollowsMovedSlot: Do with WithReplicaAck
// on a Cluster goes the same dedicated way (do.go run, acked): after the
// lock's slot moved, Do of a live holder follows it.
func TestClusterReplicaAckDoFollowsMovedSlot(t *testing.T) {
	cl := redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
	rc := cl.Client(t)
	c := newRlock(t, rc, rlock.WithReplicaAck(1, 2*time.Second))
	name := redistest.LockName(t)
	s := slot.Of(lockKeys(name).Hash)
	mu := c.Mutex(name)

	lctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer func() { assert.NoError(t, mu.Unlock(lctx)) }()

	from, err := cl.MasterOf(t.Context(), s)
	require.NoError(t, err)
	to := (from + 1) % redistest.DefaultClusterMasters
	require.NoError(t, cl.MigrateSlot(t.Context(), s, to))

	_, err = mu.Do(lctx, rc.B().Set().Key(mu.Key("x")).Value("1").Build())
	require.NoError(t, err, "Do after slot %d moved from master %d to %d", s, from, to)
}

// TestClusterReplicaAckFairHandOver: WithReplicaAck "makes every
// acquire wait until at least n replicas have acknowledged it ... so that
// no lock is held that a failover to a replica would forget". A FairMutex
// waiter of another Client is handed the lock by the holder's release
// (fair_release.lua handOver), and with WithReplicaAck it does not adopt
// it from the message (fairqueue.go adopt), which no replica acknowledged:
// it asks, and its WAIT waits for the frozen replica (it returned a hold
// at once).
func TestClusterReplicaAckFairHandOver(t *testing.T) {
	cl := redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
	admin := cl.Client(t)
	a := newRlock(t, cl.Client(t), rlock.WithReplicaAck(1, 500*time.Millisecond))
	b := newRlock(t, cl.Client(t), rlock.WithReplicaAck(1, 500*time.Millisecond))
	name := redistest.LockName(t)
	master, err := cl.MasterOf(t.Context(), slot.Of(fairKeys(name).Hash))
	require.NoError(t, err)
	replica := cl.Nodes()[redistest.DefaultClusterMasters+master]

	held, err := a.FairMutex(name).Lock(t.Context())
	require.NoError(t, err)

	type result struct {
		ctx context.Context
		err error
	}
	got := make(chan result, 1)
	go func() {
		ctx, err := b.FairMutex(name).Lock(t.Context())
		got <- result{ctx, err}
	}()
	waitQueued(t, admin, name, 1)

	require.NoError(t, replica.Pause(t.Context()))
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			assert.NoError(t, replica.Resume(context.Background()))
		}
	}
	defer resume()

	released := time.Now()
	require.NoError(t, a.FairMutex(name).Unlock(held))
	select {
	case r := <-got: // the replica is still frozen here
		t.Logf("B's Lock returned %v after A's Unlock, err %v", time.Since(released), r.err)
		resume()
		if r.err == nil {
			defer func() { assert.NoError(t, b.FairMutex(name).Unlock(r.ctx)) }()
		}
		assert.Error(t, r.err, "B's Lock returned a hold while the replica was frozen: no replica acknowledged it")
	case <-time.After(3 * time.Second):
		// Still waiting for an acknowledgement: what WithReplicaAck asks.
		resume()
		r := <-got
		if r.err == nil {
			assert.NoError(t, b.FairMutex(name).Unlock(r.ctx))
		}
	}
}

// TestClusterLocksAfterScaleOut: Locks walks "every master of a
// Cluster", also one added since the client learnt the slot map
// (scale-out: a node joins and a slot is resharded to it), which rueidis
// learns only when a command meets a redirect (locks.go clusterNodes): a
// walk left out every lock on it, in silence; here a lock another process
// holds (and renews) there.
func TestClusterLocksAfterScaleOut(t *testing.T) {
	cl := redistest.NewCluster(t, redistest.ClusterConfig{})
	walker := newRlock(t, cl.Client(t)) // an operator's process, holding nothing
	const lease = 3 * time.Second
	holder := newRlock(t, cl.Client(t), rlock.WithLeaseTime(lease))
	name := redistest.LockName(t)
	mu := holder.Mutex(name)
	s := slot.Of(lockKeys(name).Hash)
	lctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer func() { assert.NoError(t, mu.Unlock(lctx)) }()
	yielded := func() bool {
		found := false
		for st, err := range walker.Locks(t.Context(), name) {
			require.NoError(t, err)
			found = found || st.Name == name && len(st.Holders) == 1
		}
		return found
	}
	require.True(t, yielded(), "Locks yields the held lock")

	// A fourth node joins as a master without slots.
	ctx := t.Context()
	srv, err := redisserver.StartProcess(ctx, redisserver.Launcher{}, "", []string{
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "1000", "--cluster-announce-ip", "127.0.0.1",
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	nodes := make([]rueidis.Client, len(cl.Addrs()))
	for i, a := range cl.Addrs() {
		nodes[i] = nodeAdmin(t, a)
	}
	fresh := nodeAdmin(t, srv.Addr())
	host, port := nodeHostPort(t, cl.Addrs()[0])
	require.NoError(t, fresh.Do(ctx, fresh.B().ClusterMeet().Ip(host).Port(port).Build()).Error())
	redistest.Eventually(t, "every node knows the new one", func(ctx context.Context) error {
		for _, rc := range append(nodes, fresh) {
			info, err := rc.Do(ctx, rc.B().ClusterInfo().Build()).ToString()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_known_nodes:4\r\n") || !strings.Contains(info, "cluster_state:ok\r\n") {
				return fmt.Errorf("not settled: %s", info)
			}
		}
		return nil
	})

	// The lock's slot is resharded to it (redis-cli --cluster reshard's
	// steps).
	from, err := cl.MasterOf(ctx, s)
	require.NoError(t, err)
	src, freshID := nodes[from], nodeID(t, fresh)
	require.NoError(t, fresh.Do(ctx, fresh.B().ClusterSetslot().Slot(int64(s)).Importing().NodeId(nodeID(t, src)).Build()).Error())
	require.NoError(t, src.Do(ctx, src.B().ClusterSetslot().Slot(int64(s)).Migrating().NodeId(freshID).Build()).Error())
	fhost, fport := nodeHostPort(t, srv.Addr())
	for {
		ks, err := src.Do(ctx, src.B().ClusterGetkeysinslot().Slot(int64(s)).Count(100).Build()).AsStrSlice()
		require.NoError(t, err)
		if len(ks) == 0 {
			break
		}
		require.NoError(t, src.Do(ctx, src.B().Migrate().Host(fhost).Port(fport).Key("").DestinationDb(0).Timeout(5000).Keys(ks...).Build()).Error())
	}
	for _, rc := range append([]rueidis.Client{fresh, src}, nodes...) {
		require.NoError(t, rc.Do(ctx, rc.B().ClusterSetslot().Slot(int64(s)).Node().NodeId(freshID).Build()).Error())
	}
	exists, err := fresh.Do(ctx, fresh.B().Exists().Key(lockKeys(name).Hash).Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, exists, "the held lock's hash is on the new master")

	// The thing tested: the holder's watchdog renews on the new master.
	time.Sleep(lease/3 + 500*time.Millisecond)
	require.NoError(t, lctx.Err(), "the holder still holds, renewing on the new master")
	assert.True(t, yielded(), "Locks yields the lock held on the new master %s (slot %d)", srv.Addr(), s)
	st, err := walker.Inspect(ctx, name)
	require.NoError(t, err)
	assert.Len(t, st.Holders, 1, "Inspect, which follows MOVED, finds it held")
}

// TestClusterRenewDuringMigration: the watchdog renews the holds of
// one slot in one script call (watchdog/round.go batch). While that slot
// migrates, some of their keys are on the new master and some still on the
// old one; Redis then refuses a script over keys of both (ASK, TRYAGAIN),
// and the watchdog renews those holds one key per call, each where it is.
// (Every round of the slot's holds failed until the migration ended, and a
// migration longer than a lease cost every hold in its slot.)
func TestClusterRenewDuringMigration(t *testing.T) {
	cl := redistest.NewCluster(t, redistest.ClusterConfig{})
	const lease = 3 * time.Second
	c := newRlock(t, cl.Client(t), rlock.WithLeaseTime(lease))
	ctx := t.Context()
	group := redistest.LockName(t)
	const n = 10
	holds := make([]context.Context, n)
	for i := range holds {
		var err error
		holds[i], err = c.GroupedMutex(group, fmt.Sprint(i)).Lock(ctx)
		require.NoError(t, err)
	}
	hash := func(i int) string { return keys.NewGrouped(rlock.DefaultKeyPrefix, group, fmt.Sprint(i)).Hash }
	s := slot.Of(hash(0))

	// The slot starts to migrate, and half the holds' keys have moved.
	from, err := cl.MasterOf(ctx, s)
	require.NoError(t, err)
	to := (from + 1) % redistest.DefaultClusterMasters
	nodes := make([]rueidis.Client, len(cl.Addrs()))
	for i, a := range cl.Addrs() {
		nodes[i] = nodeAdmin(t, a)
	}
	src, dst := nodes[from], nodes[to]
	require.NoError(t, dst.Do(ctx, dst.B().ClusterSetslot().Slot(int64(s)).Importing().NodeId(nodeID(t, src)).Build()).Error())
	require.NoError(t, src.Do(ctx, src.B().ClusterSetslot().Slot(int64(s)).Migrating().NodeId(nodeID(t, dst)).Build()).Error())
	host, port := nodeHostPort(t, cl.Addrs()[to])
	var moved []string
	for i := range n / 2 {
		moved = append(moved, hash(i))
	}
	require.NoError(t, src.Do(ctx, src.B().Migrate().Host(host).Port(port).Key("").DestinationDb(0).Timeout(5000).Keys(moved...).Build()).Error())

	// Two leases pass with the migration open: every key is there, on one
	// node or the other, for its holder to renew.
	time.Sleep(2 * lease)
	var lost []int
	for i, h := range holds {
		if h.Err() != nil {
			lost = append(lost, i)
		}
	}

	// The migration ends.
	for {
		ks, err := src.Do(ctx, src.B().ClusterGetkeysinslot().Slot(int64(s)).Count(100).Build()).AsStrSlice()
		require.NoError(t, err)
		if len(ks) == 0 {
			break
		}
		require.NoError(t, src.Do(ctx, src.B().Migrate().Host(host).Port(port).Key("").DestinationDb(0).Timeout(5000).Keys(ks...).Build()).Error())
	}
	id := nodeID(t, dst)
	for _, rc := range append([]rueidis.Client{dst, src}, nodes...) {
		require.NoError(t, rc.Do(ctx, rc.B().ClusterSetslot().Slot(int64(s)).Node().NodeId(id).Build()).Error())
	}
	for i, h := range holds {
		if h.Err() != nil {
			t.Logf("hold %d ended: %v", i, context.Cause(h))
		}
		_ = c.GroupedMutex(group, fmt.Sprint(i)).Unlock(h)
	}
	assert.Empty(t, lost, "holds lost while their slot migrated (of %d, keys of 0..%d moved)", n, n/2-1)
}

// nodeAdmin is a plain client of exactly the node at addr.
func nodeAdmin(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return rc
}

// nodeID is the cluster node ID of the node rc speaks to.
func nodeID(t *testing.T, rc rueidis.Client) string {
	t.Helper()
	v, err := rc.Do(t.Context(), rc.B().ClusterMyid().Build()).ToString()
	require.NoError(t, err)
	return v
}

// nodeHostPort splits addr for CLUSTER MEET and MIGRATE.
func nodeHostPort(t *testing.T, addr string) (string, int64) {
	t.Helper()
	host, port, ok := strings.Cut(addr, ":")
	require.True(t, ok)
	p, err := strconv.ParseInt(port, 10, 64)
	require.NoError(t, err)
	return host, p
}
