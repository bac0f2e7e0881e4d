package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestRedLockLeavesTheOwnersOwnLockWhereItHasNoPart: a RedLock over three
// nodes holds parts on two (another owner held the third when it was
// taken), and the owner then takes the third node's Mutex as a lock of its
// own. Neither a re-entry of the RedLock (refused with ErrInvalidArgument,
// giving back what it took, as a new hold is), nor its Unlock, nor its
// taking again of a part it lost meanwhile takes that lock over: the
// owner's own lock stays held, its context live, until its own Unlock.
// (The re-entry adopted it as a part, the Unlock released it, and so did
// the final Unlock after a retake had adopted it.)
func TestRedLockLeavesTheOwnersOwnLockWhereItHasNoPart(t *testing.T) {
	const lease = 2 * time.Second
	for _, how := range []string{"re-entry", "Unlock", "retake"} {
		t.Run(how, func(t *testing.T) {
			ms := startMasters(t, 3)
			name := redistest.LockName(t)
			parts := ms.mutexes(t, name, rlock.WithLeaseTime(lease))
			rl := rlock.NewRedLock(parts...)
			rival := newRlock(t, ms.nodes[2].Client(t), rlock.WithLeaseTime(lease)).Mutex(name)
			rctx, err := rival.Lock(t.Context())
			require.NoError(t, err)
			if how == "retake" {
				require.NoError(t, rival.Unlock(rctx)) // the RedLock takes all three
			}
			lctx, err := rl.Lock(t.Context())
			require.NoError(t, err)
			var own context.Context // the owner's, in a context the RedLock's end does not end
			for attempt := 0; own == nil; attempt++ {
				require.Less(t, attempt, 5, "the owner's own lock, taken while the hold has no part there")
				if how == "retake" {
					// Its third part is lost, and its retakes are refused.
					rc := ms.raw[2]
					require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(lockKeys(name).Hash).Build()).Error())
					rctx, err = rival.Lock(t.Context())
					require.NoError(t, err)
					time.Sleep(lease) // a renewal finds the part gone, a retake is refused
					require.NoError(t, lctx.Err(), "two parts of three are held")
				}
				require.NoError(t, rival.Unlock(rctx))
				lctx2, err := parts[2].Lock(context.WithoutCancel(lctx))
				require.NoError(t, err)
				if n, err := parts[2].HoldCount(lctx2); err == nil && n == 1 {
					own = lctx2
					continue
				}
				// A retake took the node back between the other owner's
				// Unlock and this Lock, which re-entered the hold's part
				// (one owner, one hold on the node): again.
				require.Equal(t, "retake", how)
				require.NoError(t, parts[2].Unlock(lctx2))
			}
			switch how {
			case "re-entry":
				_, err := rl.Lock(lctx)
				require.ErrorIs(t, err, rlock.ErrInvalidArgument, "a re-entry would take the owner's own lock over")
			case "retake":
				time.Sleep(lease) // retakes come by
			}
			require.NoError(t, rl.Unlock(lctx))
			assert.NoError(t, own.Err(), "the owner's own lock on the third node (cause %v)", context.Cause(own))
			n, err := parts[2].HoldCount(own)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "the owner's own lock holds its one level")
			assert.NoError(t, parts[2].Unlock(own), "the owner's own Unlock")
			assert.Zero(t, ms.held(t, name), "nothing left on any node")
		})
	}
}

// TestMultiLockCloseMidLockFails: a MultiLock over three nodes is being
// taken, the third node's link slow, when the first node's Client is
// closed after its part was granted. The Lock fails, or returns a context
// already done: never a live context for a lock no longer held on every
// node. (It returned success, its context ending some 650 ms after Close,
// when the part's watcher noticed.)
func TestMultiLockCloseMidLockFails(t *testing.T) {
	ms := startMasters(t, 3)
	name := redistest.LockName(t)
	var (
		cs []*rlock.Client
		ps []*redistest.Proxy
	)
	for _, node := range ms.nodes {
		p := node.Proxy(t)
		rc, err := rueidis.NewClient(redistest.ClientOption(p.Addr()))
		require.NoError(t, err)
		cs = append(cs, newRlock(t, rc))
		t.Cleanup(rc.Close)
		ps = append(ps, p)
	}
	ml := rlock.NewMultiLock(cs[0].Mutex(name), cs[1].Mutex(name), cs[2].Mutex(name))
	warm, err := ml.Lock(t.Context()) // every link up
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(warm))

	ps[2].Delay(400 * time.Millisecond)
	type taken struct {
		lctx context.Context
		err  error
		live bool
	}
	got := make(chan taken, 1)
	go func() {
		lctx, err := ml.Lock(t.Context())
		got <- taken{lctx, err, err == nil && lctx.Err() == nil}
	}()
	time.Sleep(150 * time.Millisecond) // the first two nodes granted, the third is slow
	require.NoError(t, cs[0].Close())
	r := receive(t, got, "the Lock")
	assert.False(t, r.live, "Lock returned a live context (err %v) after Close ended a part", r.err)
	if r.err == nil {
		assert.ErrorIs(t, ml.Unlock(r.lctx), rlock.ErrNotHeld, "the hold had ended")
	}
}
