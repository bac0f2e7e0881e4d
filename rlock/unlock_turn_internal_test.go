package rlock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/lua"
)

// TestUnlockThatFailsStopsRenewal: two goroutines share an owner;
// one holds the lock, the other re-enters it, and that re-entry is slow
// (its reply comes after the retry timeout: Redis is slow, or the call
// is resent). The holder's Unlock waits for the owner's turn, gives up
// after the retry timeout and fails. Mutex.Unlock's doc: "If it fails for
// another reason, renewal stops all the same and the lease frees the
// lock". Once the other goroutine has let go of its own level, the lock
// must be free within its lease, not renewed on and on for a level whose
// Unlock already returned.
func TestUnlockThatFailsStopsRenewal(t *testing.T) {
	const lease = 500 * time.Millisecond
	c, hook, name, ks, raw := newHookedClient(t, WithRetryTimeout(300*time.Millisecond), WithLeaseTime(lease))
	m := c.Mutex(name)
	octx, _ := withOwner(t.Context())
	lctx1, err := m.Lock(octx)
	require.NoError(t, err)

	blocked, resume := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	hook.mu.Lock()
	hook.afterAcquire = func(reply []int64) {
		if len(reply) == 3 && reply[0] == int64(lua.Granted) && once.CompareAndSwap(false, true) {
			close(blocked)
			<-resume // the re-entry's reply is slow
		}
	}
	hook.mu.Unlock()
	got2 := make(chan lockResult, 1)
	go func() {
		lctx, err := m.Lock(octx)
		got2 <- lockResult{lctx, err}
	}()
	receive(t, blocked)

	err = m.Unlock(lctx1)
	require.Error(t, err, "the Unlock waited for the owner's turn past the retry timeout")
	t.Logf("the first Unlock failed: %v; its lock context is done: %v", err, lctx1.Err() != nil)
	close(resume)
	r := <-got2
	require.NoError(t, r.err)
	require.NoError(t, m.Unlock(r.ctx), "the second goroutine lets go of its level")

	deadline := time.Now().Add(6 * lease)
	for {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(ks.Hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			fields, _ := raw.Do(t.Context(), raw.B().Hgetall().Key(ks.Hash).Build()).AsStrMap()
			pttl, _ := raw.Do(t.Context(), raw.B().Pttl().Key(ks.Hash).Build()).AsInt64()
			require.Failf(t, "the level of a failed Unlock is renewed forever",
				"%v after every goroutine let go (one Unlock failing) the lock is still held: %v, %d ms left", 6*lease, fields, pttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
