package rlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// TestGivenUpWaiterBesideLateTakerLeavesRecord: Client C's waiter
// B is woken and granted the lock, but has not yet left its channel's
// queue (its goroutine is still on its way back from the grant) when
// another waiter A of C is refused (recording C as waiting again) and
// gives up. A is then the last waiter of C that still waits: C must leave
// the waiting record. It stays, because A's Done counted B, which holds
// the lock, as a waiter; B's release then addresses its wake-up to C,
// which has no waiter, and the next Client's waiter sleeps out the 30 s
// lease with the lock free.
func TestGivenUpWaiterBesideLateTakerLeavesRecord(t *testing.T) {
	c, hook, name, ks, raw := newHookedClient(t)
	node := redistest.Shared(t)
	open := func() *Client {
		oc, err := New(node.Client(t))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, oc.Close()) })
		return oc
	}
	recorded := func(n int64) {
		t.Helper()
		redistest.Eventually(t, fmt.Sprintf("%d Clients recorded", n), func(ctx context.Context) error {
			got, err := raw.Do(ctx, raw.B().Zcard().Key(ks.Queue).Build()).AsInt64()
			if err != nil || got != n {
				return fmt.Errorf("%d recorded (%v)", got, err)
			}
			return nil
		})
	}
	x := open().Mutex(name)
	xctx, err := x.Lock(t.Context())
	require.NoError(t, err)

	// B waits in C.
	bGot := make(chan lockResult, 1)
	go func() {
		lctx, err := c.Mutex(name).Lock(t.Context())
		bGot <- lockResult{lctx, err}
	}()
	recorded(1)
	require.Eventually(t, func() bool { return c.lot.live.Load() > 0 }, 5*time.Second, time.Millisecond, "B parks")

	// B's grant is held back in B's goroutine, after Redis applied it.
	blocked, resume := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	hook.mu.Lock()
	hook.afterAcquire = func(reply []int64) {
		if len(reply) == 3 && reply[0] == int64(lua.Granted) && once.CompareAndSwap(false, true) {
			close(blocked)
			<-resume
		}
	}
	hook.mu.Unlock()
	require.NoError(t, x.Unlock(xctx)) // wakes C: B takes the lock
	receive(t, blocked)

	// A waits in C, is refused (B holds), and gives up.
	actx, cancelA := context.WithCancel(t.Context())
	aGot := make(chan error, 1)
	go func() {
		_, err := c.Mutex(name).Lock(actx)
		aGot <- err
	}()
	recorded(1)
	require.Eventually(t, func() bool { return c.lot.live.Load() > 0 }, 5*time.Second, time.Millisecond, "A parks")
	cancelA()
	select {
	case err := <-aGot:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "A's Lock did not return")
	}
	time.Sleep(100 * time.Millisecond) // A's withdraw

	close(resume)
	b := <-bGot
	require.NoError(t, b.err)

	// D waits in another Client.
	d := open().Mutex(name)
	dctx, cancelD := context.WithCancel(t.Context())
	defer cancelD()
	dGot := make(chan lockResult, 1)
	go func() {
		lctx, err := d.Lock(dctx)
		dGot <- lockResult{lctx, err}
	}()
	require.Eventually(t, func() bool {
		n, _ := raw.Do(t.Context(), raw.B().Zscore().Key(ks.Queue).Member(d.c.id).Build()).AsFloat64()
		return n > 0
	}, 5*time.Second, time.Millisecond, "D is recorded")

	start := time.Now()
	require.NoError(t, c.Mutex(name).Unlock(b.ctx))
	select {
	case r := <-dGot:
		require.NoError(t, r.err)
		t.Logf("D got the lock %v after B's Unlock", time.Since(start))
		require.NoError(t, d.Unlock(r.ctx))
	case <-time.After(5 * time.Second):
		rec, _ := raw.Do(t.Context(), raw.B().Zrange().Key(ks.Queue).Min("0").Max("-1").Withscores().Build()).ToAny()
		assert.Failf(t, "the wake-up went to a Client with no waiter",
			"5 s after B freed the lock D still sleeps (its timer: the 30 s lease); waiting record %v (C is %s)", rec, c.id)
		cancelD()
	}
}
