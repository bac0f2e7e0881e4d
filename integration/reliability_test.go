package integration

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The reliability scenarios: workers in the test process and two child
// processes, on four rlock Clients, contend for one lock while a fault is
// injected; the merged history must show mutual exclusion, increasing
// fencing tokens, a fenced store that turned away every stale write, a
// counter that lost no update, and a linearizable lock. Each fault outlasts
// the lease and hits while a chosen worker (the victim) holds the lock; the
// victim, told to go on after the fault, writes with its stale token, which
// the store must refuse. Each scenario logs a "summary:" line.
// TestReliabilitySoak mixes these faults at random for as long as RLOCK_SOAK says.

func TestReliabilityBaseline(t *testing.T) {
	runScenario(t, scenario{name: "baseline"})
}

// TestReliabilityHolderStopped freezes the process that holds the lock:
// another worker takes the lock meanwhile, and once thawed the frozen holder
// sees its lock context done before it does anything.
func TestReliabilityHolderStopped(t *testing.T) {
	runScenario(t, scenario{name: "holder-stopped", victim: victimChild, fault: (*run).stopHolder})
}

// TestReliabilityRedisPaused freezes the lock's Redis: holders lose their
// locks by their local deadline, before Redis, once resumed, can hand the
// lock on.
func TestReliabilityRedisPaused(t *testing.T) {
	runScenario(t, scenario{name: "redis-paused", victim: victimLocal, fault: (*run).pauseRedis})
}

// TestReliabilityRedisRestarted kills the lock's Redis and restarts it
// empty. Redis then has forgotten every lock, so the node stays down for
// longer than the lease first, as Redlock prescribes for a node without
// persistence: every holder's local deadline passes before anyone can lock
// again. (Restarted at once, it lets another owner in before the holder's
// next renewal finds its lock gone, up to a third of the lease later; only
// fencing protects a store then.) The fencing counter is lost as well; the
// tokens handed out after the restart must still be higher.
func TestReliabilityRedisRestarted(t *testing.T) {
	runScenario(t, scenario{name: "redis-restarted", victim: victimLocal, fault: (*run).restartRedis})
}

// TestReliabilityRedisRestartedAtOnce kills the lock's Redis and restarts
// it empty at once, as a supervisor restarts a server that keeps no data:
// Redis forgets the victim's lock while the victim lives and renews it.
// Another owner may then take the lock before the victim's next renewal
// finds it gone, up to a third of the lease later: those overlaps are the
// fault's by design (only fencing protects a store then), and are
// tolerated. What must hold: the store refuses the victim's stale write,
// and the victim learns of its loss at a renewal (checkLossNoticed),
// rather than holding on while another owner holds.
func TestReliabilityRedisRestartedAtOnce(t *testing.T) {
	runScenario(t, scenario{name: "redis-restarted-at-once", victim: victimLocal, fault: (*run).restartRedisAtOnce,
		tolerate: overlapCosts, after: (*run).checkLossNoticed})
}

// TestReliabilityLinkCut cuts the link between half the Clients (the
// victim's among them) and Redis: the victim loses its lock by its local
// deadline, before a Client on the other side can take it.
//
// The other side takes the lock as soon as Redis expires it, so what keeps
// the two apart is only rlock's clock-drift allowance, lease/100 + 2ms,
// less the time a busy process takes to fire the deadline's timer and run
// the goroutine that acts on it. At an 800ms lease that is 10ms, of which
// a loaded 2-core machine under -race was seen to eat 8; a 2s lease leaves
// 22ms. The summary's loss_margin shows what was left.
func TestReliabilityLinkCut(t *testing.T) {
	runScenario(t, scenario{name: "link-cut", proxy: true, lease: 2 * time.Second, victim: victimLocal, fault: (*run).cutLink})
}

// thawGrace is how long a thawed victim has before it is told to go on.
const thawGrace = 200 * time.Millisecond

// stopHolder freezes the victim's process (SIGSTOP) for longer than the
// lease.
func (r *run) stopHolder(context.Context) (Op, error) {
	proc := r.child.cmd.Process
	op := Op{Kind: opFreeze, Proc: r.child.cfg.Proc, Start: monoNow(), Detail: "SIGSTOP"}
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		op.End = monoNow()
		return op, fmt.Errorf("stop the victim: %w", err)
	}
	time.Sleep(r.fault) // the fault lasts r.fault
	op.End = monoNow()  // before SIGCONT: the process cannot act before this
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		return op, fmt.Errorf("resume the victim: %w", err)
	}
	// A thawed process runs its overdue timers, the lease deadline among
	// them, as soon as it runs at all; the grace only keeps GO from
	// overtaking them. A victim still unaware of its loss after it acts in
	// the hold's name has its window stretched over the freeze, and fails
	// the exclusion check.
	time.Sleep(thawGrace)
	return op, nil
}

// pauseRedis freezes the lock's Redis (SIGSTOP) for longer than the lease.
func (r *run) pauseRedis(ctx context.Context) (Op, error) {
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: "lock node paused"}
	if err := r.lock.Pause(ctx); err != nil {
		op.End = monoNow()
		return op, fmt.Errorf("pause redis: %w", err)
	}
	time.Sleep(r.fault) // the fault lasts r.fault
	err := r.lock.Resume(ctx)
	op.End = monoNow()
	return op, err
}

// restartRedis kills the lock's Redis and, longer than the lease later,
// restarts it empty.
func (r *run) restartRedis(ctx context.Context) (Op, error) {
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: "lock node killed, restarted empty"}
	if err := r.lock.Kill(ctx); err != nil {
		op.End = monoNow()
		return op, fmt.Errorf("kill redis: %w", err)
	}
	time.Sleep(r.fault) // the fault lasts r.fault
	err := r.lock.Restart(ctx)
	op.End = monoNow()
	return op, err
}

// cutLink holds every byte between the proxied Clients and Redis for longer
// than the lease, then lets them through.
func (r *run) cutLink(context.Context) (Op, error) {
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: "proxy link cut"}
	r.proxy.Cut()
	time.Sleep(r.fault) // the fault lasts r.fault
	r.proxy.Heal()
	op.End = monoNow()
	return op, nil
}

// restartRedisAtOnce kills the lock's Redis, restarts it empty at once, and
// leaves the holders twice the lease to notice.
func (r *run) restartRedisAtOnce(ctx context.Context) (Op, error) {
	op := Op{Kind: opFault, Proc: "harness", Start: monoNow(), Detail: "lock node killed, restarted empty at once"}
	err := r.lock.Kill(ctx)
	if err == nil {
		err = r.lock.Restart(ctx)
	}
	time.Sleep(r.fault) // the fault lasts r.fault
	op.End = monoNow()
	return op, err
}

// checkLossNoticed checks that the victim, whose lock a fault took away
// behind its back, saw its hold lost before the fault ended: the fault
// leaves it twice the lease, and a renewal comes every third of it. A
// renewal that finds the key gone must say so.
func (r *run) checkLossNoticed(t *testing.T, ops []Op) {
	for _, fault := range ops {
		if fault.Kind != opFault {
			continue
		}
		spanning := holdsAcross(ops, victimLocal, fault)
		assert.NotEmpty(t, spanning, "a hold of the victim's process spans %s", fault.Detail)
		for _, victim := range spanning {
			i := slices.IndexFunc(ops, func(op Op) bool { return op.Kind == opLost && op.Owner == victim.Owner })
			if assert.GreaterOrEqual(t, i, 0, "the victim %s never saw its lock lost: it renewed a lock Redis had forgotten", victim.Owner) {
				noticed := time.Duration(ops[i].End - fault.Start)
				t.Logf("the victim saw its loss %v after the fault began (lease %v)", noticed.Round(time.Millisecond), r.lease)
				assert.Less(t, ops[i].End, fault.End, "the victim saw its loss while the fault lasted")
			}
		}
	}
}
