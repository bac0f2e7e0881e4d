package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// TestSentinel writes through a sentinel client, fails over, and checks
// that the client writes to the new master and the old one becomes its
// replica.
func TestSentinel(t *testing.T) {
	s := NewSentinel(t, SentinelConfig{})
	require.Len(t, s.SentinelAddrs(), 3)
	rc := s.Client(t)
	require.Equal(t, rueidis.ClientModeSentinel, rc.Mode())
	ctx := t.Context()
	key := "redistest:sentinel:" + t.Name()
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(key).Value("before").Build()).Error())

	old, err := s.Master(ctx)
	require.NoError(t, err)
	require.Same(t, s.Nodes()[0], old, "the first node is master at start")

	start := time.Now()
	require.NoError(t, s.Failover(ctx))
	t.Logf("failover took %v", time.Since(start))
	next, err := s.Master(ctx)
	require.NoError(t, err)
	require.Same(t, s.Nodes()[1], next, "the replica is master after Failover")

	// A write counts once the new master holds it: the old one accepts
	// writes too until the sentinels demote it.
	nextClient := next.Client(t)
	start = time.Now()
	i := 0
	Eventually(t, "the client writes to the new master", func(ctx context.Context) error {
		i++
		value := fmt.Sprint("after-", i)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := rc.Do(wctx, rc.B().Set().Key(key).Value(value).Build()).Error(); err != nil {
			return err
		}
		got, err := nextClient.Do(ctx, nextClient.B().Get().Key(key).Build()).ToString()
		if err != nil || got != value {
			return fmt.Errorf("the new master holds %q, not %q (%v)", got, value, err)
		}
		return nil
	})
	t.Logf("client wrote to the new master %v after Failover", time.Since(start))

	oldClient := old.Client(t)
	start = time.Now()
	require.Eventually(t, func() bool {
		role, err := oldClient.Do(ctx, oldClient.B().Role().Build()).ToArray()
		if err != nil || len(role) < 3 {
			return false
		}
		kind, _ := role[0].ToString()
		host, _ := role[1].ToString()
		port, _ := role[2].AsInt64()
		return kind == "slave" && fmt.Sprintf("%s:%d", host, port) == next.Addr()
	}, 20*time.Second, 100*time.Millisecond, "the sentinels make the old master a replica of the new one")
	t.Logf("old master became a replica %v after the write", time.Since(start))
}

// TestSentinelKillMaster kills the master: the replica, which had every
// write (WAIT), is promoted, and the killed node comes back empty as its
// replica, in sync, without taking the master's place again.
func TestSentinelKillMaster(t *testing.T) {
	s := NewSentinel(t, SentinelConfig{})
	ctx := t.Context()
	old, err := s.Master(ctx)
	require.NoError(t, err)
	oldClient := old.Client(t)
	key := "redistest:sentinel:" + t.Name()
	require.NoError(t, oldClient.Do(ctx, oldClient.B().Set().Key(key).Value("kept").Build()).Error())
	acked, err := oldClient.Do(ctx, oldClient.B().Wait().Numreplicas(1).Timeout(5000).Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, acked, "the replica has the write")

	start := time.Now()
	require.NoError(t, s.KillMaster(ctx))
	t.Logf("kill, promotion and the killed node's return as a replica took %v", time.Since(start))
	next, err := s.Master(ctx)
	require.NoError(t, err)
	require.NotSame(t, old, next, "the replica is master")
	nextClient := next.Client(t)
	got, err := nextClient.Do(ctx, nextClient.B().Get().Key(key).Build()).ToString()
	require.NoError(t, err)
	require.Equal(t, "kept", got, "the new master has what the replica had")
	got, err = oldClient.Do(ctx, oldClient.B().Get().Key(key).Build()).ToString()
	require.NoError(t, err, "the restarted node, in sync with the new master, has it too")
	require.Equal(t, "kept", got)
	role, err := oldClient.Do(ctx, oldClient.B().Role().Build()).ToArray()
	require.NoError(t, err)
	kind, _ := role[0].ToString()
	require.Equal(t, "slave", kind, "the restarted node is a replica")
}
