package rlock_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFinalUnlockRacingARenewal: a final Unlock's release frees the lock,
// its reply is lost to a connection reset, and a renewal round, sent on
// the new connection before the release's resend, finds the lock gone,
// round after round at random moments. Nobody else touches the lock: the
// Unlock returns nil and its context ends as unlocked (context.Canceled),
// not lost. (The renewal ended the hold as lost first: the resend, finding
// the lock gone, then made the Unlock fail with ErrNotHeld.)
func TestFinalUnlockRacingARenewal(t *testing.T) {
	p := redistest.Shared(t).Proxy(t)
	rc, err := rueidis.NewClient(redistest.ClientOption(p.Addr()))
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c := newRlock(t, rc, rlock.WithLeaseTime(600*time.Millisecond)) // a renewal round every 200 ms
	for round := range 60 {
		p.Delay(0)
		mu := c.Mutex(redistest.LockName(t))
		lctx, err := mu.Lock(t.Context())
		require.NoError(t, err)
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond) // a moment of the renewal period
		p.Delay(15 * time.Millisecond)
		unlocked := make(chan error, 1)
		go func() { unlocked <- mu.Unlock(lctx) }()
		time.Sleep(time.Duration(16+rand.IntN(12)) * time.Millisecond) // the release has landed, its reply not
		p.Reset()
		err = receive(t, unlocked, "the Unlock")
		require.NotErrorIs(t, err, rlock.ErrNotHeld, "round %d: nobody else touched the lock", round)
		if err == nil {
			assert.NotErrorIs(t, context.Cause(lctx), rlock.ErrLockLost, "round %d: the Unlock's context ends as unlocked", round)
		}
	}
}
