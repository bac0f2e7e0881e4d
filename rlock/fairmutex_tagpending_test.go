package rlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestFairSharedOwnerSubscribePendingWithdraws: two calls A and B
// of one owner wait on a FairMutex and share its queue entry. B joins
// while the Client's subscription is being made again (here: the
// owner's Redis user lost its channel permissions, which disconnects its
// subscribers and makes resubscribing fail for a while). A gives up
// (not the last of its owner's calls: B is there), then B gives up in
// Subscribe. Nobody waits for that owner any more, so its entry must
// leave the queue: when the holder releases, the waiter of another
// Client queued behind it must get the lock promptly, not after the dead
// entry's own lease.
func TestFairSharedOwnerSubscribePendingWithdraws(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	if !s.Node.Controllable() {
		t.Skip("needs a Redis of its own")
	}
	name := redistest.LockName(t)
	admin := s.Client(t)
	user := "rv5-" + name
	acl := func(rules ...string) {
		args := append([]string{"ACL", "SETUSER", user}, rules...)
		require.NoError(t, admin.Do(context.Background(), admin.B().Arbitrary(args...).Build()).Error())
	}
	acl("reset", "on", "nopass", "~*", "&*", "+@all")
	t.Cleanup(func() { admin.Do(context.Background(), admin.B().Arbitrary("ACL", "DELUSER", user).Build()) })

	opt := redistest.ClientOption(s.Node.Addr())
	opt.Username = user
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	oc := newRlock(t, rc)
	fm := oc.FairMutex(name)

	holder := newRlock(t, s.Client(t)).FairMutex(name)
	hctx, err := holder.Lock(t.Context())
	require.NoError(t, err)

	owner := sharedOwner(t, oc, name)
	actx, cancelA := context.WithCancel(owner)
	defer cancelA()
	aDone := lockWith(fm, actx)
	waitParked(t, fm, 1) // A is queued

	other := newRlock(t, s.Client(t)).FairMutex(name)
	cGot := make(chan time.Time, 1)
	go func() {
		cctx, ok, err := other.TryLock(t.Context(), 15*time.Second, 0)
		if err == nil && ok {
			cGot <- time.Now()
			other.Unlock(cctx)
			return
		}
		close(cGot)
	}()
	waitParked(t, other, 1) // C is queued behind A's entry

	// The owner's subscription is lost, and cannot be made again for now.
	acl("resetchannels")
	time.Sleep(2 * time.Second) // resubscribing has failed for a while: it backs off up to 1 s

	bctx, cancelB := context.WithCancel(owner)
	defer cancelB()
	bDone := lockWith(fm, bctx)
	time.Sleep(10 * time.Millisecond) // B asked once (refused) and is in Subscribe

	cancelA()
	r := receive(t, aDone, "A's Lock")
	require.Error(t, r.err)
	t.Logf("A: %v", r.err)
	cancelB()
	r = receive(t, bDone, "B's Lock")
	require.Error(t, r.err)
	t.Logf("B: %v", r.err)
	acl("allchannels")
	time.Sleep(200 * time.Millisecond)

	released := time.Now()
	require.NoError(t, holder.Unlock(hctx))
	select {
	case at, ok := <-cGot:
		require.True(t, ok, "C never got the lock within its 15 s wait")
		if d := at.Sub(released); d > 3*time.Second {
			t.Fatalf("C got the free lock %v after the release (the owner that gave up kept its entry)", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("C's TryLock did not return")
	}
}
