package rlock_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// A FairMutex hands its lock to the owner longest in its queue inside
// Redis, and tells it by a message addressed to it. These tests hand the
// lock back to an owner whose Client has another call on it.

// TestFairHandOverByMessageAsksNothing: a waiter handed the lock by a
// release on another Client takes it by the message addressed to it: its
// Lock sends no request after the ask that queued it.
func TestFairHandOverByMessageAsksNothing(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	name := redistest.LockName(t)
	rec := &hooktest.Recorder{}
	f := newRlock(t, s.Client(t), rlock.WithHooks(rec)).FairMutex(name)
	other := newRlock(t, s.Client(t)).FairMutex(name)
	taken, err := other.Lock(t.Context())
	require.NoError(t, err)
	got := make(chan lockResult, 1)
	release := make(chan struct{})
	go holdUntil(f, t.Context(), got, release)
	waitQueued(t, s.Client(t), name, 1)
	require.NoError(t, other.Unlock(taken))
	require.NoError(t, receive(t, got, "the waiter after the hand-over").err)
	close(release)
	require.NoError(t, receive(t, got, "the waiter's Unlock").err)
	ends := rec.Snapshot().Acquires
	require.Len(t, ends, 1)
	assert.Equal(t, 2, ends[0].Attempts, "a refused attempt and the ask that queued it; none after the message")
}

// TestFairHandOverAfterForceIsANewHold: another Client force-unlocks a
// FairMutex and takes it while its owner, which does not know yet, still
// holds it here at one level; a second goroutine of the owner asks to
// re-enter and is queued. When the other lets go, Redis hands the lock to
// the owner at one level, under a new fencing token: the count the lost
// hold had. The owner learnt of the loss when Redis refused the re-entry,
// so the goroutine's grant is a new hold, never a re-entry of the lost one
// running on under its old token; the lost hold's Unlock leaves nothing.
func TestFairHandOverAfterForceIsANewHold(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	name := redistest.LockName(t)
	c := newRlock(t, s.Client(t))
	f := c.FairMutex(name)
	owner := sharedOwner(t, c, name)
	held, err := f.Lock(owner)
	require.NoError(t, err)
	oldToken, _ := f.FencingToken(held)

	other := newRlock(t, s.Client(t)).FairMutex(name)
	forced, err := other.ForceUnlock(t.Context())
	require.NoError(t, err)
	require.True(t, forced)
	taken, err := other.Lock(t.Context())
	require.NoError(t, err)
	otherToken, _ := other.FencingToken(taken)

	got := make(chan lockResult, 1)
	release := make(chan struct{})
	go holdUntil(f, owner, got, release)
	waitQueued(t, raw, name, 1)
	assert.ErrorIs(t, context.Cause(held), rlock.ErrLockLost, "the refused re-entry told the owner, while the other Client holds")
	require.NoError(t, other.Unlock(taken))

	h := receive(t, got, "the owner's second goroutine after the hand-over")
	require.NoError(t, h.err)
	token, _ := f.FencingToken(h.ctx)
	assert.Greater(t, token, otherToken, "the hand-over's token, not the lost hold's %d", oldToken)
	n, err := f.HoldCount(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a new hold, not a re-entry of the lost one")
	assert.ErrorIs(t, f.Unlock(held), rlock.ErrNotHeld, "the lost hold has nothing to leave")
	locked, err := f.IsLocked(t.Context())
	require.NoError(t, err)
	assert.True(t, locked, "the new hold's level stays")
	close(release)
	require.NoError(t, receive(t, got, "the new hold's Unlock").err)
	locked, err = f.IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked)
}

// TestFairHandOverGivenBackIsNotAdopted: the lock is handed over to an
// owner whose goroutine waits in the queue, and before that goroutine
// reads the message addressed to it (held back here), another goroutine of
// the owner Locks, and gives up while its request is on the wire: Redis
// grants it by re-entry of the lock handed over, and the level, granted to
// a done context, is given back, which frees the lock. The message is
// stale then: the waiter must ask Redis, and hold the lock only when Redis
// says so, rather than take it by the message while it is free.
func TestFairHandOverGivenBackIsNotAdopted(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw := s.Client(t)
	name := redistest.LockName(t)
	gate := &noteGate{Client: s.Client(t)}
	c := newRlock(t, gate)
	f := c.FairMutex(name)
	owner := sharedOwner(t, c, name)

	other := newRlock(t, s.Client(t)).FairMutex(name)
	taken, err := other.Lock(t.Context())
	require.NoError(t, err)
	gate.hold()
	got := make(chan lockResult, 1)
	release := make(chan struct{})
	go holdUntil(f, owner, got, release)
	waitQueued(t, raw, name, 1)
	field := queued(t, raw, name)[0]
	require.NoError(t, other.Unlock(taken))
	gate.waitHeld(t)
	n, err := raw.Do(t.Context(), raw.B().Hget().Key(fairKeys(name).Hash).Field(field).Build()).AsInt64()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "Redis handed the lock over to the owner")

	stalled, resume := gate.stallAcquire()
	gctx, giveUp := context.WithCancel(owner)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := f.Lock(gctx)
		gaveUp <- err
	}()
	receive(t, stalled, "the other goroutine's acquire, stalled")
	gate.open()
	giveUp()
	close(resume)
	assert.ErrorIs(t, receive(t, gaveUp, "the Lock given up"), context.Canceled)

	h := receive(t, got, "the waiter after its message")
	require.NoError(t, h.err)
	locked, err := f.IsLocked(t.Context())
	require.NoError(t, err)
	assert.True(t, locked, "Redis has the lock the waiter holds")
	count, err := f.HoldCount(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, count)
	close(release)
	require.NoError(t, receive(t, got, "the waiter's Unlock").err)
}

// holdUntil locks f through owner, reports the Lock on got, and unlocks
// once release is closed, reporting the Unlock's error too.
func holdUntil(f *rlock.FairMutex, owner context.Context, got chan<- lockResult, release <-chan struct{}) {
	lctx, err := f.Lock(owner)
	got <- lockResult{lctx, err}
	if err != nil {
		return
	}
	<-release
	got <- lockResult{err: f.Unlock(lctx)}
}

// noteGate stands between a Client and Redis. While it holds, it keeps
// back the hand-over messages ('@<field> <seq> <token>') that the Client's
// subscriptions receive, until open delivers them, from the goroutine
// that opens it (rueidis reads a connection's replies on the goroutine
// that runs the callback, which must not block). And it can stall the
// next FairMutex acquire sent through it.
type noteGate struct {
	rueidis.Client
	mu      sync.Mutex
	holding bool
	held    []func()
	arrived chan struct{} // closed at the first message held back
	stall   func()        // runs before the next acquire is sent, once
}

func (g *noteGate) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	return g.Client.Receive(ctx, subscribe, func(m rueidis.PubSubMessage) {
		g.mu.Lock()
		if g.holding && isHandOver(m.Message) {
			g.held = append(g.held, func() { fn(m) })
			if len(g.held) == 1 {
				close(g.arrived)
			}
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		fn(m)
	})
}

// Do sends cmd; a stalled acquire is sent once resumed, whether or not its
// caller has given up meanwhile: it was on the wire already.
func (g *noteGate) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if args := cmd.Commands(); len(args) > 1 && args[0] == "EVALSHA" && args[1] == lua.FairAcquire.SHA1() {
		g.mu.Lock()
		stall := g.stall
		g.stall = nil
		g.mu.Unlock()
		if stall != nil {
			stall()
			ctx = context.WithoutCancel(ctx)
		}
	}
	return g.Client.Do(ctx, cmd)
}

// hold starts holding hand-over messages back.
func (g *noteGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holding, g.arrived = true, make(chan struct{})
}

// waitHeld waits until a hand-over message is held back.
func (g *noteGate) waitHeld(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	arrived := g.arrived
	g.mu.Unlock()
	receive(t, arrived, "a hand-over message")
}

// open stops holding messages back and delivers those held, in order.
func (g *noteGate) open() {
	g.mu.Lock()
	held := g.held
	g.holding, g.held = false, nil
	g.mu.Unlock()
	for _, deliver := range held {
		deliver()
	}
}

// stallAcquire has the next acquire sent through g wait until resume is
// closed; stalled is closed when it waits.
func (g *noteGate) stallAcquire() (stalled, resume chan struct{}) {
	stalled, resume = make(chan struct{}), make(chan struct{})
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stall = func() {
		close(stalled)
		<-resume
	}
	return stalled, resume
}

// isHandOver reports whether msg is a hand-over message: '@', the
// waiter's field, its seq and the token (queue.lua's handOver).
func isHandOver(msg string) bool {
	parts := strings.Fields(msg)
	return len(parts) == 3 && strings.HasPrefix(parts[0], "@") && parts[1] != "next"
}
