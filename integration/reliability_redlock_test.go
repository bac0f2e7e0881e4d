package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestReliabilityRedLockPartition runs the workers on a RedLock over three
// independent masters, each in a network namespace of its own, and cuts
// child process c0 off, both ways, from some of the masters for twice the
// lease, while its victim worker holds the RedLock with a part on every
// master (victimMay):
//
//   - minority (one master): c0 keeps a quorum, so the victim keeps its
//     lock through the fault, and nobody else holds meanwhile;
//   - majority (two masters): c0 loses its quorum, and the victim's
//     context must be done before any other owner takes the lock, which
//     happens once the cut-off parts expire on their masters.
//
// A RedLock has no fencing token (no one counter orders its holders), so
// these histories are checked for exclusion, lost counter updates and
// linearizability, not for fenced writes.
func TestReliabilityRedLockPartition(t *testing.T) {
	for _, p := range []struct {
		name  string
		cut   int // masters c0 is cut off from
		keeps bool
	}{
		{"minority", 1, true},
		{"majority", 2, false},
	} {
		t.Run(p.name, func(t *testing.T) {
			sc := scenario{name: "redlock-" + p.name, deploy: deployRedLock, victim: victimChild, keeps: p.keeps,
				lease: partitionLease, fault: cutMasters(p.name, p.cut)}
			if p.keeps {
				sc.after = (*run).checkKept
			}
			runScenario(t, sc)
		})
	}
}

// redLockMasters is how many masters a RedLock of the scenario spans.
const redLockMasters = 3

// deployRedLock runs redLockMasters Redis servers, and the child processes
// c0 and c1, each in a namespace of its own; every process's Clients take
// a RedLock over all the masters.
func deployRedLock(t *testing.T, _ scenario, r *run) deployment {
	r.netns = redistest.NewNetns(t)
	addrs := make([]string, redLockMasters)
	for i := range addrs {
		host := masterHost(i)
		r.netns.AddHost(t, host)
		addrs[i] = r.netns.StartNode(t, host).Addr()
	}
	all := strings.Join(addrs, ",")
	d := deployment{mode: modeRedLock, near: all, far: all, storeHost: r.netns.HostIP(), netns: map[string]string{}}
	for _, proc := range []string{"c0", "c1"} {
		r.netns.AddHost(t, proc)
		d.netns[proc] = r.netns.Namespace(proc)
	}
	return d
}

// masterHost names the network host of master i.
func masterHost(i int) string { return fmt.Sprintf("redis%d", i) }

// cutMasters is the fault that cuts c0 off from the first n masters, both
// ways.
func cutMasters(name string, n int) func(*run, context.Context) (Op, error) {
	var ways []way
	for i := range n {
		ways = append(ways, way{"c0", masterHost(i)}, way{masterHost(i), "c0"})
	}
	return impairLink("cut-"+name, ways, redistest.Impairment{Loss: 1})
}

// checkKept checks that the victim kept, through each fault, the hold it
// had when the fault began: that hold was never seen lost, and its final
// Unlock found it held.
func (r *run) checkKept(t *testing.T, ops []Op) {
	for _, fault := range ops {
		if fault.Kind != opFault {
			continue
		}
		kept := holdsAcross(ops, victimChild, fault)
		require.Len(t, kept, 1, "one hold of %s, the victim's, spans the fault %s", victimChild, fault.Detail)
		assert.Equal(t, outOK, kept[0].Outcome, "%s's Unlock after the fault found its lock held", kept[0].Owner)
		for _, op := range ops {
			assert.False(t, op.Kind == opLost && op.Owner == kept[0].Owner, "the victim %s lost its lock: %s", kept[0].Owner, op.Detail)
		}
	}
}

// holdsAcross returns the final releases of the holds of process proc that
// span fault: acquired, at the first level, before it began, and released
// after it ended.
func holdsAcross(ops []Op, proc string, fault Op) []Op {
	before := map[string]bool{} // owners of proc holding before the fault
	for _, op := range ops {
		if op.Kind == opAcquire && op.Proc == proc && op.Depth == 1 && op.Outcome == outOK && op.End < fault.Start {
			before[op.Owner] = true
		}
	}
	var out []Op
	for _, op := range ops {
		if op.Kind == opRelease && op.Final && op.Proc == proc && op.Start >= fault.End && before[op.Owner] {
			out = append(out, op)
		}
	}
	return out
}

// redLocker is a RedLock as a holdLocker, with the Mutexes it spans. A
// RedLock has no fencing token: it reports token 0, and whether ctx still
// holds.
type redLocker struct {
	*rlock.MultiLock
	nodes []*rlock.Mutex
}

func (redLocker) FencingToken(ctx context.Context) (int64, bool) { return 0, ctx.Err() == nil }

// spansAll reports whether the hold ctx carries has a part on every
// master. A RedLock is granted on a quorum of parts: a master slow to
// answer (a loaded machine) is left out, and a hold of a bare quorum loses
// it to a cut of any master it holds a part on. The victim of a partition
// scenario holds on every master, so that a cut of a minority leaves it a
// quorum, as the scenario says.
func (r redLocker) spansAll(ctx context.Context) bool {
	for _, m := range r.nodes {
		if n, err := m.HoldCount(ctx); err != nil || n == 0 {
			return false
		}
	}
	return true
}

// victimMay reports whether the hold lctx carries, taken through mu, may
// be the victim's: a RedLock's only when it spans every master.
func victimMay(mu holdLocker, lctx context.Context) bool {
	r, ok := mu.(redLocker)
	return !ok || r.spansAll(lctx)
}
