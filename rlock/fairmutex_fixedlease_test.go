package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFairFixedLeaseExpiryWakesNext: two waiters W and X of one Client
// queue on a fair lock behind a holder with a long fixed lease. W asks
// for a fixed lease (LockFor) that happens to equal the Client's watchdog
// lease. The holder unlocks, W is handed the lock, and W lets its fixed
// lease run out (what LockFor is for). X, the next in the queue, must take
// the lock soon after that lease ends.
//
// On the current code the hand-over to W skips the '@X next <ms>' message
// (queue.lua giveTo: W#lease '0' is taken to mean a watchdog-renewed lease,
// which ends only with W's process), but W's hold is a fixed one that no
// watchdog renews (acquire.go: ARGV[10] is '1' whenever the lease asked
// for equals the watchdog's). X is never told, and sleeps on until the
// long lease of the earlier holder would have run out, while the lock is
// free.
func TestFairFixedLeaseExpiryWakesNext(t *testing.T) {
	const lease = 2 * time.Second
	for _, heir := range []bool{false, true} {
		name := "byMessage"
		if heir {
			name = "byReply"
		}
		t.Run(name, func(t *testing.T) {
			s := redistest.Setup{Node: redistest.Shared(t)}
			lock := redistest.LockName(t)
			admin := s.Client(t)
			c := newRlock(t, s.Client(t), rlock.WithLeaseTime(lease))
			holderC := newRlock(t, s.Client(t))
			if heir {
				holderC = c // the holder's Unlock hands W the lock in its reply
			}
			holder := holderC.FairMutex(lock)
			held, err := holder.LockFor(t.Context(), time.Minute)
			require.NoError(t, err)

			fm := c.FairMutex(lock)
			ctxW, cancelW := context.WithCancel(t.Context())
			defer cancelW()
			gotW := make(chan lockResult2, 1)
			go func() {
				lctx, err := fm.LockFor(ctxW, lease) // a fixed lease, equal to the watchdog's
				gotW <- lockResult2{lctx, err}
			}()
			waitQueued(t, admin, lock, 1)
			ctxX, cancelX := context.WithCancel(t.Context())
			defer cancelX()
			gotX := lockWith(fm, ctxX)
			waitQueued(t, admin, lock, 2)
			waitParked(t, fm, 2)

			require.NoError(t, holder.Unlock(held))
			w := receive(t, gotW, "W's LockFor")
			require.NoError(t, w.err)
			handed := time.Now()
			// W does not unlock: its fixed lease ends its hold.
			select {
			case <-w.ctx.Done():
			case <-time.After(lease + 2*time.Second):
				t.Fatal("W's fixed lease did not end its hold")
			}

			select {
			case x := <-gotX:
				require.NoError(t, x.err)
				t.Logf("X took the lock %v after W was handed it", time.Since(handed))
				require.NoError(t, fm.Unlock(x.ctx))
			case <-time.After(lease + 3*time.Second):
				pttl, err := admin.Do(t.Context(), admin.B().Pttl().Key(fairKeys(lock).Hash).Build()).AsInt64()
				require.NoError(t, err)
				assert.Fail(t, "X still sleeps while the lock is free",
					"%v after W was handed a %v lease; the lock's pttl %d (-2: free); queue %v",
					time.Since(handed), lease, pttl, queued(t, admin, lock))
				cancelX()
				if x := <-gotX; x.err == nil {
					require.NoError(t, fm.Unlock(x.ctx))
				}
			}
		})
	}
}
