package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReliabilityHolderKilled kills (SIGKILL) the process that holds the
// lock, once holding it with the watchdog and once with a fixed lease.
// Nobody releases the dead holder's lock: it must come free within one
// lease, when Redis expires it, and a waiter in another process must take
// it. A replacement process then joins the contention. At the end nothing
// is held: the lock's hash is gone.
func TestReliabilityHolderKilled(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		name := map[bool]string{false: "watchdog", true: "fixed-lease"}[fixed]
		t.Run(name, func(t *testing.T) {
			runScenario(t, scenario{name: "holder-killed-" + name, victim: victimChild, fixedVictim: fixed,
				fault: (*run).killHolder, after: (*run).checkFreedAfterKill})
		})
	}
}

// killSlack is how much later than one lease after a kill the lock may be
// taken again: a waiter wakes when the holder's lease ends, then acquires,
// on a machine busy with other tests.
const killSlack = time.Second

// killHolder kills the victim's process while it holds the lock, and starts
// a replacement, the next victim, for the rest of the run.
func (r *run) killHolder(context.Context) (Op, error) {
	c := r.child
	op := Op{Kind: opKill, Proc: c.cfg.Proc, Start: monoNow(), Detail: "SIGKILL"}
	c.killed = true
	err := c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
	op.End = monoNow()
	if err != nil {
		return op, fmt.Errorf("kill the victim: %w", err)
	}
	cfg := c.cfg
	cfg.Proc = fmt.Sprintf("%sr%d", victimChild, len(r.children)) // owners are "<proc>.…": no prefix of another's
	cfg.Out = filepath.Join(filepath.Dir(c.cfg.Out), cfg.Proc+".jsonl")
	cfg.Run = time.Until(r.deadline)
	if cfg.Run <= 0 {
		r.victim, r.child = nil, nil
		return op, nil
	}
	r.startChild(r.t, cfg)
	return op, nil
}

// checkFreedAfterKill checks that after each kill another process took the
// lock within one lease, and that nothing is left held at the end.
func (r *run) checkFreedAfterKill(t *testing.T, ops []Op) {
	for _, kill := range ops {
		if kill.Kind != opKill {
			continue
		}
		var next *Op // the first hold another process took after the kill
		for i, op := range ops {
			if op.Kind == opAcquire && op.Outcome == outOK && op.Depth == 1 && op.End > kill.End &&
				op.Proc != kill.Proc && (next == nil || op.End < next.End) {
				next = &ops[i]
			}
		}
		require.NotNil(t, next, "nobody took the lock after %s was killed", kill.Proc)
		freed := time.Duration(next.End - kill.End)
		t.Logf("after the kill of %s, %s took the lock %v later (lease %v)", kill.Proc, next.Owner, freed.Round(time.Millisecond), r.lease)
		assert.LessOrEqual(t, freed, r.lease+killSlack, "the lock came free within one lease of the kill")
	}
	rc := r.lock.Client(t)
	n, err := rc.Do(t.Context(), rc.B().Exists().Key(lockKeys(r.locks[0]).Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock is still held after the run")
}
