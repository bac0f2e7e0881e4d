package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redistest"
)

// TestReliabilitySentinelFailover runs the contending workers against a
// Sentinel setup (master, replica, three sentinels) and kills the master
// while a holder holds the lock: the sentinels promote the replica (about
// 3 s), every Client follows, and the killed node comes back empty as a
// replica. The lease (800 ms) is shorter than the failover, so every
// holder's context is done by its local deadline before the new master
// serves anyone. With WithReplicaAck(1) an acquire counts only once the
// replica has it; without, the last fencing-token INCR may not have reached
// the replica, and the new master could hand out a token again: the run
// would show it as a token order violation.
func TestReliabilitySentinelFailover(t *testing.T) {
	for _, ack := range []int{0, 1} {
		t.Run(fmt.Sprintf("replica-ack=%d", ack), func(t *testing.T) {
			runScenario(t, scenario{name: fmt.Sprintf("sentinel-failover-ack%d", ack), deploy: deploySentinel,
				victim: victimLocal, replicaAck: ack, faultFor: sentinelFault, fault: (*run).killSentinelMaster,
				linearizeWithin: faultyLinearize, tolerate: []string{porcupineTimeout}})
		})
	}
}

// sentinelFault is how long a run allows for its failover: the promotion
// takes about 3 s, the killed node's return as a replica in sync about 10 s
// more (the sentinels convert it on their next look at it).
const sentinelFault = 15 * time.Second

// deploySentinel starts a Sentinel setup; every Client finds the master
// through the sentinels.
func deploySentinel(t *testing.T, _ scenario, r *run) deployment {
	r.sentinel = redistest.NewSentinel(t, redistest.SentinelConfig{})
	addrs := strings.Join(r.sentinel.SentinelAddrs(), ",")
	return deployment{mode: modeSentinel, near: addrs, far: addrs}
}

// killSentinelMaster kills the master and returns once the replica is
// promoted and the killed node restarted.
func (r *run) killSentinelMaster(ctx context.Context) (Op, error) {
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: "sentinel master killed, replica promoted"}
	err := r.sentinel.KillMaster(ctx)
	op.End = monoNow()
	return op, err
}
