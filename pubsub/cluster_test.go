package pubsub

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
)

// TestCluster: on a Redis Cluster the sharded subscriptions live on the
// masters that own the channels' slots, where SPUBLISH delivers, the
// inboxes' beside their channels'. When a slot moves, Redis drops the
// slot's subscriptions; the Subscriber subscribes on the new owner and
// wakes every waiter of the channel. A channel without a hash tag, which
// its inbox could not share, is refused.
func TestCluster(t *testing.T) {
	awaitRueidisRefresh(t)
	cl := redistest.NewCluster(t, redistest.ClusterConfig{})
	e := &env{sharded: true, rc: cl.Client(t), admin: cl.Client(t)}
	e.subs = New(e.rc, true, 0, slog.New(slog.NewTextHandler(t.Output(), nil)), envID)
	t.Cleanup(func() { require.NoError(t, e.subs.Close()) })

	_, err := e.subs.Subscribe(t.Context(), channelName(t, "no-hash-tag"))
	require.ErrorIs(t, err, ErrNoHashTag)

	// One channel on each master.
	chans := make([]string, redistest.DefaultClusterMasters)
	for i, found := 0, 0; found < len(chans); i++ {
		name := fmt.Sprintf("%s:{%d}", channelName(t, "unlock"), i)
		master, err := cl.MasterOf(t.Context(), slot.Of(name))
		require.NoError(t, err)
		if chans[master] == "" {
			chans[master] = name
			found++
		}
	}
	waiters := make([][2]*Waiter, len(chans))
	for i, ch := range chans {
		waiters[i] = [2]*Waiter{e.subscribe(t, ch), e.subscribe(t, ch)}
		require.EqualValues(t, 1, e.publish(t, ch), "subscribed on the slot's master")
		requireWoken(t, waiters[i][0])
		requireQuiet(t, waiters[i][1])
	}

	moved := chans[0]
	require.NoError(t, cl.MigrateSlot(t.Context(), slot.Of(moved), 1))
	requireWoken(t, waiters[0][0], "resubscribed after the slot moved")
	requireWoken(t, waiters[0][1], "resubscribed after the slot moved")
	requireQuiet(t, waiters[1][0], waiters[1][1], waiters[2][0], waiters[2][1])
	require.EqualValues(t, 1, e.publish(t, moved), "subscribed on the slot's new master")
	requireWoken(t, waiters[0][0])
	require.EqualValues(t, 1, e.publishMessage(t, Inbox(moved, envID), Addressed+envID), "the inbox, on the slot's new master")
	requireWoken(t, waiters[0][0])
	requireQuiet(t, waiters[0][1])

	for _, ws := range waiters {
		ws[0].Done(false)
		ws[1].Done(false)
	}
	e.requireGone(t, chans...)
	for _, ch := range chans {
		e.requireGone(t, Inbox(ch, envID))
	}
}

// awaitRueidisRefresh waits, once t and its other clean-ups are done, for
// the goroutines a rueidis cluster client leaves behind after a MOVED
// reply: the delayed topology refresh (up to about a second later) and the
// closing of the connections that refresh replaced (5 s later). No Close
// waits for them, and goleak would report them as leaks of this package.
func awaitRueidisRefresh(t *testing.T) {
	t.Cleanup(func() {
		require.Eventually(t, func() bool {
			buf := make([]byte, 1<<20)
			stacks := buf[:runtime.Stack(buf, true)]
			return !bytes.Contains(stacks, []byte("rueidis.(*call).DelayDo")) &&
				!bytes.Contains(stacks, []byte("rueidis.(*clusterClient)._refresh"))
		}, 15*time.Second, 50*time.Millisecond, "rueidis' refresh goroutines are still running")
	})
}
