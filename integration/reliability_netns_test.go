package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redistest"
)

// TestReliabilityPartition puts the lock's Redis and the two child
// processes in network namespaces of their own (ip netns, veth, a bridge)
// and impairs what passes between one child (c0) and Redis, for twice the
// lease: cut one way or both (iptables DROP), lossy (a random half dropped),
// or slow (a 1 kbit/s tc htb class, whose queue delays every request;
// this machine's kernel has no netem). A cut must
// cost c0's holder its lock, its context done before anyone else takes the
// lock; a delay or loss may or may not cost it, and either way exclusion
// and fencing must hold.
func TestReliabilityPartition(t *testing.T) {
	for _, p := range partitions {
		t.Run(p.name, func(t *testing.T) {
			runScenario(t, scenario{name: "partition-" + p.name, deploy: deployNetns, victim: p.victim,
				lease: partitionLease, fault: p.fault()})
		})
	}
}

// partition is one impairment of what passes between child c0 and Redis.
type partition struct {
	name   string
	victim string // c0's holder is the victim where the fault must cost it the lock
	ways   []way
	imp    redistest.Impairment
}

// partitions are the impairments that TestReliabilityPartition runs one
// by one, and the soak draws from.
var partitions = func() []partition {
	toRedis, fromRedis := way{"c0", "redis"}, way{"redis", "c0"}
	return []partition{
		{"cut-both", victimChild, []way{toRedis, fromRedis}, redistest.Impairment{Loss: 1}},
		{"cut-to-redis", victimChild, []way{toRedis}, redistest.Impairment{Loss: 1}},
		{"cut-from-redis", victimChild, []way{fromRedis}, redistest.Impairment{Loss: 1}},
		{"slow-both", "", []way{toRedis, fromRedis}, redistest.Impairment{Rate: "1kbit"}},
		{"loss-both", "", []way{toRedis, fromRedis}, redistest.Impairment{Loss: 0.5}},
	}
}()

// fault is the fault that injects p.
func (p partition) fault() func(*run, context.Context) (Op, error) {
	return impairLink(p.name, p.ways, p.imp)
}

// partitionLease is the lease of the partition runs: long enough that its
// clock-drift allowance (lease/100 + 2ms = 22ms) outlasts a busy machine's
// lateness in acting on a deadline, as in TestReliabilityLinkCut.
const partitionLease = 2 * time.Second

// way is one direction between two hosts of the network.
type way struct{ from, to string }

// deployNetns runs the lock's Redis, and the child processes c0 and c1,
// each in a namespace of its own; the test process stays in its own,
// joined to the same network, and serves the fenced store on it.
func deployNetns(t *testing.T, _ scenario, r *run) deployment {
	r.netns = redistest.NewNetns(t)
	r.netns.AddHost(t, "redis")
	r.lock = r.netns.StartNode(t, "redis")
	d := deployment{near: r.lock.Addr(), far: r.lock.Addr(), storeHost: r.netns.HostIP(), netns: map[string]string{}}
	for _, proc := range []string{"c0", "c1"} {
		r.netns.AddHost(t, proc)
		d.netns[proc] = r.netns.Namespace(proc)
	}
	return d
}

// impairLink is the fault that impairs each of ways as imp says for the
// fault's length, then lifts it.
func impairLink(name string, ways []way, imp redistest.Impairment) func(*run, context.Context) (Op, error) {
	return func(r *run, ctx context.Context) (Op, error) {
		op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: fmt.Sprintf("%s: %+v on %v", name, imp, ways)}
		var errs []error
		for _, w := range ways {
			errs = append(errs, r.netns.Impair(ctx, w.from, w.to, imp))
		}
		time.Sleep(r.fault) // the fault lasts r.fault
		for _, w := range ways {
			errs = append(errs, r.netns.Clear(ctx, w.from))
		}
		op.End = monoNow()
		return op, errors.Join(errs...)
	}
}
