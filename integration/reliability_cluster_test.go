package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
)

// TestReliabilityClusterFailover runs the contending workers against a
// Redis Cluster of three masters, each with a replica, on three locks, one
// in a slot of each master, and kills the master of the victim's lock while
// the victim holds it: the cluster promotes the replica (about 2 s, past
// the 800 ms lease, so every hold on that master is lost by its holder's
// local deadline), and the killed node rejoins as a replica. With
// WithReplicaAck(1) an acquire counts only once the replica has it. The
// summary's lost count is how many holds were lost; the checks demand that
// every hold ended in a release or a loss its holder's context reported,
// and exclusion on every lock.
func TestReliabilityClusterFailover(t *testing.T) {
	for _, ack := range []int{0, 1} {
		t.Run(fmt.Sprintf("replica-ack=%d", ack), func(t *testing.T) {
			runScenario(t, scenario{name: fmt.Sprintf("cluster-failover-ack%d", ack), deploy: deployCluster,
				victim: victimLocal, replicaAck: ack, faultFor: clusterFault, fault: (*run).killClusterMaster,
				linearizeWithin: faultyLinearize, tolerate: []string{porcupineTimeout}, after: (*run).logUnreported})
		})
	}
}

// TestReliabilityClusterMigration moves the slot of one of the three
// contended locks to another master (redis-cli --cluster reshard's
// sequence: MIGRATE, then CLUSTER SETSLOT NODE) while workers hold and wait
// for it: clients follow ASK and MOVED, and no hold may be lost or shared.
func TestReliabilityClusterMigration(t *testing.T) {
	runScenario(t, scenario{name: "cluster-migration", deploy: deployCluster, fault: (*run).migrateLockSlot,
		after: (*run).logUnreported})
}

// clusterFault is how long a run allows for a cluster failover: the
// promotion takes about 2 s, the killed node's return as a replica in sync
// a few more.
const clusterFault = 10 * time.Second

// deployCluster starts a Cluster of three masters with a replica each, and
// names a lock in a slot of each master.
func deployCluster(t *testing.T, _ scenario, r *run) deployment {
	r.cluster = redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
	addrs := strings.Join(r.cluster.Addrs(), ",")
	return deployment{mode: modeCluster, near: addrs, far: addrs, locks: spreadLocks(t, redistest.DefaultClusterMasters)}
}

// spreadLocks names one lock in each of masters equal slot ranges, as the
// harness's cluster assigns them, so that lock i is served by master i.
func spreadLocks(t *testing.T, masters int) []string {
	var locks []string
	for i := 0; len(locks) < masters; i++ {
		name := fmt.Sprintf("%s:%d", redistest.LockName(t), i)
		if int(slot.Of(lockKeys(name).Hash))*masters/slot.Count == len(locks) {
			locks = append(locks, name)
		}
	}
	return locks
}

// killClusterMaster kills the master of the victim's lock and returns once
// its replica serves the slot and the killed node is back as a replica.
func (r *run) killClusterMaster(ctx context.Context) (Op, error) {
	s := slot.Of(lockKeys(r.locks[0]).Hash)
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: fmt.Sprintf("master of slot %d killed", s)}
	next, err := r.cluster.KillMaster(ctx, s)
	op.End = monoNow()
	if err == nil {
		op.Detail += fmt.Sprintf(", node %d promoted", next)
	}
	return op, err
}

// migrateLockSlot moves the first lock's slot to the next master.
func (r *run) migrateLockSlot(ctx context.Context) (Op, error) {
	s := slot.Of(lockKeys(r.locks[0]).Hash)
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow()}
	from, err := r.cluster.MasterOf(ctx, s)
	if err == nil {
		to := (from + 1) % redistest.DefaultClusterMasters
		op.Detail = fmt.Sprintf("slot %d migrated from node %d to %d", s, from, to)
		err = r.cluster.MigrateSlot(ctx, s, to)
	}
	op.End = monoNow()
	return op, err
}

// logUnreported logs how many holds were lost in Redis without their
// holder's context saying so before the final Unlock, which then answered
// ErrNotHeld: the key vanished (with a node) and the release came before
// the next renewal could notice. Every hold must have ended one way or the
// other; the checker fails a hold that did neither.
func (r *run) logUnreported(t *testing.T, ops []Op) {
	unreported, lost := 0, 0
	for _, lock := range r.locks {
		for _, h := range buildHolds(opsOf(ops, lock), &verdict{}) {
			switch {
			case h.lost:
				lost++
			case h.released && !h.freed:
				unreported++
			}
		}
	}
	t.Logf("holds lost: %d reported by the holder's context, %d found only by the final Unlock (ErrNotHeld)", lost, unreported)
}
