package rlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// TestHeirGaveUpAfterUnknownHandOver: the release that hands
// the lock to a parked waiter runs, but no reply of it comes, and the
// heir's context ends meanwhile. The heir's Lock fails, and its turn keeps
// the hand-over as unsettled; but nothing settles it (another waiter of the
// Client is still subscribed, so the heir's withdraw does not run), and
// the heir's owner never calls again: the lock stays held in Redis by an
// owner that left, and the other waiter sleeps until its lease runs out.
func TestHeirGaveUpAfterUnknownHandOver(t *testing.T) {
	k := handOverKinds[0] // Mutex
	s := newHandOver(t, k, WithRetryTimeout(300*time.Millisecond))

	// A second waiter of the same Client, parked behind the first.
	got2 := make(chan lockResult, 1)
	go func() {
		lctx, err := s.mu.Lock(t.Context())
		got2 <- lockResult{lctx, err}
	}()
	require.Eventually(t, func() bool {
		s.c.lot.mu.Lock()
		defer s.c.lot.mu.Unlock()
		e := s.c.lot.entries[s.keys.Hash]
		return e != nil && len(e.waiters) == 2
	}, 5*time.Second, time.Millisecond, "both waiters park")

	var down atomic.Bool
	down.Store(true)
	var ran atomic.Bool
	s.hook.release = func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult {
		switch {
		case !down.Load():
			return send(t.Context())
		case ran.CompareAndSwap(false, true):
			send(t.Context()) // the hand-over applies
			s.cancel()        // and the heir gives up meanwhile
		}
		return lost()
	}
	require.Error(t, s.mu.Unlock(s.holder), "no reply came")
	down.Store(false)
	r := s.waiterGot(t)
	require.ErrorIs(t, r.err, context.Canceled, "the heir gave up")

	start := time.Now()
	select {
	case r2 := <-got2:
		require.NoError(t, r2.err)
		t.Logf("the other waiter got the lock %v after the heir gave up", time.Since(start))
		require.NoError(t, s.mu.Unlock(r2.ctx))
	case <-time.After(5 * time.Second):
		fields, err := s.raw.Do(t.Context(), s.raw.B().Hgetall().Key(s.keys.Hash).Build()).AsStrMap()
		require.NoError(t, err)
		pttl, err := s.raw.Do(t.Context(), s.raw.B().Pttl().Key(s.keys.Hash).Build()).AsInt64()
		require.NoError(t, err)
		assert.Fail(t, "the lock handed to a waiter that gave up is left held",
			"5 s after the heir's Lock failed the other waiter still waits; the lock %v has %d ms of lease left", fields, pttl)
		_, err = s.c.Mutex(t.Name()).ForceUnlock(t.Context()) // for the next run of the test
		require.NoError(t, err)
		r2 := <-got2
		if r2.err == nil {
			require.NoError(t, s.mu.Unlock(r2.ctx))
		}
	}
}

// TestHandedHoldLostBeforeHeirBinds: a release hands the lock
// to a parked waiter W of owner O; before W binds it (inherit waits for
// O's turn), the lock is lost in Redis (a ForceUnlock elsewhere), and
// another goroutine G of O, queued on O's turn first, takes the free lock
// afresh: its grant ends the handed hold as lost and begins a new one with
// one level. W then binds to G's hold, and both Locks return one level
// each while O holds one: W's Unlock leaves G's level, and G's Unlock
// finds nothing held.
func TestHandedHoldLostBeforeHeirBinds(t *testing.T) {
	node := redistest.Shared(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	ks := keys.New(DefaultKeyPrefix, name)
	for _, sc := range []*lua.Script{mutexKind.acquire, mutexKind.release} {
		require.NoError(t, raw.Do(t.Context(), raw.B().ScriptLoad().Script(sc.Text()).Build()).Error())
	}
	hook := &scriptHook{Client: node.Client(t), hash: ks.Hash, kind: mutexKind}
	c, err := New(hook)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	m := c.Mutex(name)

	holder, err := m.Lock(t.Context())
	require.NoError(t, err)
	octx, o := withOwner(t.Context())
	id := m.holdID(o)

	type result struct {
		who string
		lockResult
	}
	got := make(chan result, 2)
	go func() {
		lctx, err := m.Lock(octx)
		got <- result{"W", lockResult{lctx, err}}
	}()
	require.Eventually(t, func() bool { return c.lot.live.Load() > 0 }, 5*time.Second, time.Millisecond, "W parks")

	hook.release = func(send func(context.Context) rueidis.RedisResult) rueidis.RedisResult {
		res := send(t.Context())                                                            // hands the lock to W
		require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(ks.Hash).Build()).Error()) // lost in Redis
		go func() {
			lctx, err := m.Lock(octx)
			got <- result{"G", lockResult{lctx, err}}
		}()
		require.Eventually(t, func() bool { // G waits for O's turn, which the release has
			sh, h := c.turns.shard(id)
			sh.mu.Lock()
			defer sh.mu.Unlock()
			tn := sh.find(id, h)
			return tn != nil && sh.waiting[tn] != nil
		}, 5*time.Second, time.Millisecond, "G queues on O's turn")
		return res
	}
	require.NoError(t, m.Unlock(holder))
	hook.release = nil

	levels := 0
	var ctxs []context.Context
	for range 2 {
		select {
		case r := <-got:
			if r.err == nil {
				levels++
				ctxs = append(ctxs, r.ctx)
				token, _ := m.FencingToken(r.ctx)
				t.Logf("%s's Lock returned a level, token %d", r.who, token)
			} else {
				t.Logf("%s's Lock failed: %v", r.who, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Log("a Lock is still waiting")
		}
	}
	n, err := m.HoldCount(octx)
	require.NoError(t, err)
	fields, err := raw.Do(t.Context(), raw.B().Hgetall().Key(ks.Hash).Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, levels, n, "levels returned by O's Locks vs O's hold count; Redis: %v", fields)
	for _, lctx := range ctxs {
		t.Logf("Unlock: %v", m.Unlock(lctx))
	}
}
