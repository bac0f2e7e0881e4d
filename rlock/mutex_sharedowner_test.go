package rlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/rlock"
)

// gatedAcquires is a rueidis client whose calls of the Mutex acquire
// script on one lock wait while the gate is shut: it holds a woken
// waiter's acquire back so that a test decides who reaches the freed lock
// first.
type gatedAcquires struct {
	rueidis.Client
	hash string

	mu   sync.Mutex
	shut chan struct{} // nil: open
	held chan struct{} // told when a call waits at the gate
}

func (g *gatedAcquires) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[3] == g.hash &&
		(args[1] == lua.Acquire.SHA1() || args[1] == lua.Acquire.Text()) {
		g.mu.Lock()
		shut := g.shut
		g.mu.Unlock()
		if shut != nil {
			select {
			case g.held <- struct{}{}:
			default:
			}
			<-shut
		}
	}
	return g.Client.Do(ctx, cmd)
}

func (g *gatedAcquires) close() {
	g.mu.Lock()
	g.shut = make(chan struct{})
	g.held = make(chan struct{}, 1)
	g.mu.Unlock()
}

func (g *gatedAcquires) open() {
	g.mu.Lock()
	close(g.shut)
	g.shut = nil
	g.mu.Unlock()
}

// TestMutexSharedOwnerReentryLeavesRecord: a Client whose only waiter is
// a goroutine of an owner that meanwhile takes the lock by another
// goroutine (an attempt that does not wait, made while the lock is free
// because the release woke another Client) re-enters, and returns: its
// Client leaves the record of waiting Clients, as a waiter's that takes
// the lock does. (It stayed recorded, unwoken, with no waiter: a later
// release addressed '@<that Client>', which nobody took, and the Client
// behind it waited out the holder's 30 s lease.)
func TestMutexSharedOwnerReentryLeavesRecord(t *testing.T) {
	node := redistest.Shared(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := lockKeys(name)

	x := newRlock(t, node.Client(t)).Mutex(name)
	gate := &gatedAcquires{Client: node.Client(t), hash: k.Hash}
	d := newRlock(t, gate).Mutex(name)
	cc := newRlock(t, node.Client(t))
	c := cc.Mutex(name)
	e := newRlock(t, node.Client(t)).Mutex(name)

	hx, err := x.Lock(t.Context())
	require.NoError(t, err)

	got := make(chan held, 4)
	lockAndReport(t, 0, d, t.Context(), got) // D: recorded first
	waitRecorded(t, node, k, 1)
	owner := sharedOwner(t, cc, name)
	lockAndReport(t, 1, c, owner, got) // C, owner O, goroutine G2: recorded second
	waitRecorded(t, node, k, 2)
	lockAndReport(t, 2, e, t.Context(), got) // E: recorded third
	waitRecorded(t, node, k, 3)

	// X's release wakes D ('@D'); D's acquire is held at the gate while
	// another goroutine of O takes the free lock, which re-enters G2.
	gate.close()
	require.NoError(t, x.Unlock(hx))
	receive(t, gate.held, "D's woken acquire")
	g1, err := c.Lock(owner)
	require.NoError(t, err)
	g2 := receive(t, got, "G2 re-enters")
	require.Equal(t, 1, g2.i)
	gate.open() // D is refused, and recorded again in its place

	redistest.Eventually(t, "D refused again", func(ctx context.Context) error {
		n, err := raw.Do(ctx, raw.B().Zcount().Key(k.Queue).Min("0").Max("4503599627370495").Build()).AsInt64()
		if err != nil {
			return err
		}
		return redistest.Exactly("Clients recorded to be woken: D and E, not C", n, 2)
	})
	members, err := raw.Do(t.Context(), raw.B().Zrange().Key(k.Queue).Min("0").Max("-1").Withscores().Build()).AsZScores()
	require.NoError(t, err)
	t.Logf("waiting record while O holds the lock and no waiter of C is left: %v", members)

	require.NoError(t, c.Unlock(g2.ctx))
	require.NoError(t, c.Unlock(g1))
	hd := receive(t, got, "D gets the lock")
	require.Equal(t, 0, hd.i)
	start := time.Now()
	require.NoError(t, d.Unlock(hd.ctx))
	select {
	case he := <-got:
		assert.Equal(t, 2, he.i)
		t.Logf("E got the lock %v after D's Unlock", time.Since(start))
		assert.Less(t, time.Since(start), handoffBound)
		require.NoError(t, e.Unlock(he.ctx))
	case <-time.After(handoffBound):
		locked, err := e.IsLocked(t.Context())
		require.NoError(t, err)
		members, err := raw.Do(t.Context(), raw.B().Zrange().Key(k.Queue).Min("0").Max("-1").Withscores().Build()).AsZScores()
		require.NoError(t, err)
		t.Errorf("E still waits %v after D's Unlock freed the lock (locked: %v); waiting record %v: C's mark (its wake-up swallowed), E still to be woken", handoffBound, locked, members)
	}
}

// gateKey marks a Lock's context for waitGate: its AcquireWait blocks.
type gateKey struct{}

// waitGate is hooks whose AcquireWait, for a call whose context carries a
// gate (gateKey), reports that it began to wait and blocks until the gate
// opens: the call's first attempt was refused, and it has not yet begun
// its wait.
type waitGate struct {
	rlock.NopHooks
}

type gateCall struct {
	waiting chan struct{}
	open    chan struct{}
}

func (waitGate) AcquireWait(ctx context.Context, _ rlock.LockRef) {
	if g, ok := ctx.Value(gateKey{}).(*gateCall); ok {
		close(g.waiting)
		<-g.open
	}
}

// TestMutexSharedOwnerNeverParksBehindOwnHold: a goroutine of an owner
// whose first attempt was refused, and whose owner then took the lock by
// another goroutine (a release of its Client handed it over) before it
// began its wait, parks behind that hold, its own owner's, without asking
// Redis: it does not re-enter, but sleeps until its owner's final Unlock
// or the 30 s lease it parked for, although Lock returns at once for a
// ctx whose owner holds the lock.
func TestMutexSharedOwnerNeverParksBehindOwnHold(t *testing.T) {
	c := sharedClient(t, rlock.WithHooks(waitGate{}))
	name := redistest.LockName(t)
	m := c.Mutex(name)
	rec := redistest.Shared(t).Client(t)
	k := lockKeys(name)

	h1, err := m.Lock(t.Context()) // owner O1 holds the lock
	require.NoError(t, err)
	owner := sharedOwner(t, c, name)

	got := make(chan held, 2)
	lockAndReport(t, 1, m, owner, got) // G1 of O parks in the lot
	waitWaiting(t, rec, k, 1)
	redistest.Eventually(t, "G1 recorded", func(ctx context.Context) error {
		n, err := rec.Do(ctx, rec.B().Zcard().Key(k.Queue).Build()).AsInt64()
		if err != nil {
			return err
		}
		return redistest.Exactly("Clients recorded", n, 1)
	})

	gc := &gateCall{waiting: make(chan struct{}), open: make(chan struct{})}
	lockAndReport(t, 2, m, context.WithValue(owner, gateKey{}, gc), got) // G2 of O: refused, held before its wait
	receive(t, gc.waiting, "G2 refused")

	require.NoError(t, m.Unlock(h1)) // hands the lock to G1: O holds it
	g1 := receive(t, got, "G1 handed the lock")
	require.Equal(t, 1, g1.i)

	close(gc.open) // G2 begins its wait while its owner holds the lock
	start := time.Now()
	select {
	case g2 := <-got:
		t.Logf("G2 re-entered %v after its wait began", time.Since(start))
		n, err := m.HoldCount(owner)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		require.NoError(t, m.Unlock(g2.ctx))
	case <-time.After(handoffBound):
		t.Errorf("G2 still waits %v while its own owner holds the lock", handoffBound)
		require.NoError(t, m.Unlock(g1.ctx))
		g2 := receive(t, got, "G2, once its owner let go")
		t.Logf("G2 took the lock %v after its wait began, once G1 let go", time.Since(start))
		require.NoError(t, m.Unlock(g2.ctx))
		return
	}
	require.NoError(t, m.Unlock(g1.ctx))
}
