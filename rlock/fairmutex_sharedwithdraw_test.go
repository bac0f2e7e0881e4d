package rlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// lockResult2 is what a Lock returned.
type lockResult2 struct {
	ctx context.Context
	err error
}

// lockWith starts fm.Lock(ctx) and returns a channel that receives its
// outcome.
func lockWith(fm *rlock.FairMutex, ctx context.Context) <-chan lockResult2 {
	got := make(chan lockResult2, 1)
	go func() {
		lctx, err := fm.Lock(ctx)
		got <- lockResult2{lctx, err}
	}()
	return got
}

// waitParked waits until n waiters of m's Client are parked on m.
func waitParked[M *rlock.Mutex | *rlock.FairMutex](t *testing.T, m M, n int) {
	t.Helper()
	redistest.Eventually(t, fmt.Sprintf("%d waiters parked", n), func(context.Context) error {
		return redistest.Exactly("parked", rlock.Parked(m), n)
	})
}

// TestFairSharedOwnerOneGoroutineGivesUp: two goroutines of one owner
// (a shared owner context) wait in a fair lock's queue, where the owner
// has one place, ahead of another owner X. One of the goroutines gives up
// (its context ends). The other still waits, so the owner must keep its
// place: when the holder unlocks, the owner's remaining goroutine takes
// the lock before X, and promptly.
//
// On the current code the goroutine that gives up withdraws the owner's
// entry from the queue (waitInQueue calls withdraw with last = true
// whatever other calls of the owner still wait): X is handed the lock
// first, and the owner's other goroutine, no longer queued and not told,
// sleeps on until the holder's lease would have run out.
func TestFairSharedOwnerOneGoroutineGivesUp(t *testing.T) {
	for _, rival := range []bool{true, false} {
		t.Run(fmt.Sprintf("rival=%v", rival), func(t *testing.T) {
			s := redistest.Setup{Node: redistest.Shared(t)}
			name := redistest.LockName(t)
			admin := s.Client(t)
			holderC := newRlock(t, s.Client(t))
			holder := holderC.FairMutex(name)
			held, err := holder.Lock(t.Context())
			require.NoError(t, err)

			c := newRlock(t, s.Client(t))
			owner := sharedOwner(t, c, name)
			fm := c.FairMutex(name)
			ctx1, cancel1 := context.WithCancel(owner)
			defer cancel1()
			ctx2, cancel2 := context.WithCancel(owner)
			defer cancel2()
			got1 := lockWith(fm, ctx1)
			got2 := lockWith(fm, ctx2)
			waitParked(t, fm, 2)          // both asked, both parked
			waitQueued(t, admin, name, 1) // one owner, one place

			var gotX <-chan lockResult2
			var x *rlock.FairMutex
			if rival {
				x = newRlock(t, s.Client(t)).FairMutex(name)
				gotX = lockWith(x, t.Context())
				waitQueued(t, admin, name, 2)
			}

			cancel1()
			r1 := receive(t, got1, "the goroutine that gave up")
			require.ErrorIs(t, r1.err, context.Canceled)
			time.Sleep(100 * time.Millisecond) // its withdraw, if any, lands

			q := queued(t, admin, name)
			t.Logf("queue after one goroutine of the owner gave up: %v", q)

			require.NoError(t, holder.Unlock(held))
			select {
			case r2 := <-got2:
				require.NoError(t, r2.err)
				if rival {
					select {
					case rx := <-gotX:
						t.Errorf("X, queued after the owner, also returned from Lock (err %v) while the owner holds", rx.err)
					default:
					}
				}
				require.NoError(t, fm.Unlock(r2.ctx))
			case rx := <-gotX:
				gotX = nil
				cancel2()
				assert.Fail(t, "the owner's remaining goroutine was overtaken: X, queued after it, took the lock first")
				if rx.err == nil {
					require.NoError(t, x.Unlock(rx.ctx))
				}
				if r2 := <-got2; r2.err == nil {
					require.NoError(t, fm.Unlock(r2.ctx))
				}
			case <-time.After(3 * time.Second):
				locked, err := fm.IsLocked(t.Context())
				require.NoError(t, err)
				assert.Fail(t, "the owner's remaining goroutine still sleeps 3 s after the holder's Unlock",
					"lock held: %v; queue %v", locked, queued(t, admin, name))
				cancel2()
				if r2 := <-got2; r2.err == nil {
					require.NoError(t, fm.Unlock(r2.ctx))
				}
			}
			if gotX != nil {
				select {
				case rx := <-gotX:
					if rx.err == nil {
						require.NoError(t, x.Unlock(rx.ctx))
					}
				case <-time.After(10 * time.Second):
					t.Fatal("X never took the lock")
				}
			}
		})
	}
}
