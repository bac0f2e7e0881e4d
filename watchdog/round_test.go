package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/internal/slot"
	"github.com/rlock/rlock/watchdog"
)

func TestRenewalsKeepLockAlive(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	const lease = 600 * time.Millisecond
	rec := newRecorder()
	h := rec.holds(t, 1)[0]
	lock(t, rc, lease, h)
	w := start(t, rc, lease, nil)
	added := time.Now()
	require.NoError(t, w.Add(h))

	time.Sleep(4 * lease) // the thing under test: four leases pass, and only renewals keep the key
	assert.True(t, exists(t, rc, h.Key), "key expired while renewed")
	sent := rec.sentTimes(h)
	// A renewal every lease/3 makes 12 in 4 leases; allow for a slow machine.
	assert.GreaterOrEqual(t, len(sent), 6, "renewals in 4 leases")
	// The bounds are the property: a renewal later than a lease after the
	// one before lets the key expire, and one sooner than lease/6 renews
	// for nothing.
	prev := added
	for i, s := range sent {
		gap := s.Sub(prev)
		assert.Positive(t, gap, "sent time %d not after the one before", i)
		assert.Less(t, gap, lease, "renewal %d came after the lease ran out", i)
		assert.Greater(t, gap, lease/6, "renewal %d came too early", i)
		prev = s
	}
	assert.Zero(t, rec.losses(h))

	w.Remove(h)
	redistest.Eventually(t, "the key expires after Remove", func(context.Context) error {
		if exists(t, rc, h.Key) {
			return fmt.Errorf("%s still exists", h.Key)
		}
		return nil
	})
}

func TestLostWhenFieldIsGone(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	const lease = 600 * time.Millisecond
	for name, gone := range map[string]func(rueidis.Client, *watchdog.Entry) rueidis.Commands{
		"key deleted": func(rc rueidis.Client, h *watchdog.Entry) rueidis.Commands {
			return rueidis.Commands{rc.B().Del().Key(h.Key).Build()}
		},
		"held by another owner": func(rc rueidis.Client, h *watchdog.Entry) rueidis.Commands {
			return rueidis.Commands{
				rc.B().Hset().Key(h.Key).FieldValue().FieldValue("someone-else", "1").Build(),
				rc.B().Hdel().Key(h.Key).Field(h.Field).Build(),
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			holds := rec.holds(t, 2) // holds[1] stays held
			lock(t, rc, lease, holds...)
			w := start(t, rc, lease, nil)
			addAll(t, w, holds...)
			require.Eventually(t, func() bool { return len(rec.sentTimes(holds[0])) > 0 },
				5*time.Second, 5*time.Millisecond, "first renewal")

			for _, res := range rc.DoMulti(context.Background(), gone(rc, holds[0])...) {
				require.NoError(t, res.Error())
			}
			require.Eventually(t, func() bool { return rec.losses(holds[0]) > 0 },
				2*lease, 5*time.Millisecond, "Lost within a period")
			renewals := len(rec.sentTimes(holds[0]))
			assert.Equal(t, 1, w.Len(), "the lost hold is still registered")

			time.Sleep(2 * lease / 3 * 2) // the thing under test: two periods pass without a callback
			assert.Equal(t, 1, rec.losses(holds[0]), "Lost calls")
			assert.Len(t, rec.sentTimes(holds[0]), renewals, "Renewed called after Lost")
			assert.Zero(t, rec.losses(holds[1]), "the other hold was lost")
			assert.True(t, exists(t, rc, holds[1].Key), "the other hold's key expired")
		})
	}
}

func TestRenewalsAreBatched(t *testing.T) {
	// A Redis of its own, so that its command counts are this test's.
	rc := redistest.New(t, redistest.Config{}).Client(t)
	const (
		lease = 3 * time.Second // a period of 1s: the holds added below share one or two ticks
		n     = 1000
	)
	rec := newRecorder()
	holds := rec.holds(t, n)
	lock(t, rc, time.Minute, holds...)
	w := start(t, rc, lease, nil)
	addAll(t, w, holds...)

	require.Eventually(t, func() bool { return rec.renewals() >= n }, 3*lease, 10*time.Millisecond, "first renewal of every hold")
	before := calls(t, rc, "evalsha", "eval", "script|load")
	require.Eventually(t, func() bool { return rec.renewals() >= 2*n }, 3*lease, 10*time.Millisecond, "second renewal of every hold")
	after := calls(t, rc, "evalsha", "eval", "script|load")

	renews := after["evalsha"] + after["eval"] - before["evalsha"] - before["eval"]
	t.Logf("one renewal of %d holds: %d renew calls, %d SCRIPT LOAD", n, renews, after["script|load"]-before["script|load"])
	// n/MaxBatch calls, one more if the holds were added across a tick.
	assert.GreaterOrEqual(t, renews, int64(n/watchdog.MaxBatch), "renew calls for one renewal of every hold")
	assert.LessOrEqual(t, renews, int64(n/watchdog.MaxBatch+2), "renew calls for one renewal of every hold")
}

func TestFailedRenewalsAreRetried(t *testing.T) {
	t.Run("cut link", func(t *testing.T) {
		node := redistest.Shared(t)
		admin := node.Client(t)
		proxy := node.Proxy(t)
		rc, err := rueidis.NewClient(redistest.ClientOption(proxy.Addr()))
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		const lease = 1500 * time.Millisecond
		rec := newRecorder()
		h := rec.holds(t, 1)[0]
		lock(t, admin, lease, h)
		var warns warnings
		w := start(t, rc, lease, slog.New(&warns))
		require.NoError(t, w.Add(h))
		require.Eventually(t, func() bool { return rec.renewals() > 0 }, lease, 5*time.Millisecond, "first renewal")

		// Cut for three periods: a round times out for sure. The key is made
		// persistent meanwhile, so that it is still there for the renewals
		// that get through once the link is back, however late they are.
		proxy.Cut()
		require.NoError(t, admin.Do(context.Background(), admin.B().Persist().Key(h.Key).Build()).Error())
		time.Sleep(lease) // the fault: the link stays cut for three renew periods
		proxy.Heal()
		healed := rec.renewals()
		require.Eventually(t, func() bool { return rec.renewals() > healed },
			2*lease, 5*time.Millisecond, "renewed again once the link was back")

		assert.Positive(t, warns.count(), "renewal failures logged")
		assert.Zero(t, rec.losses(h), "a timeout is not a loss")
		ttl, err := admin.Do(context.Background(), admin.B().Pttl().Key(h.Key).Build()).AsInt64()
		require.NoError(t, err)
		assert.Positive(t, ttl, "the renewal set no lease")
		assert.Equal(t, 1, w.Len())
	})
}

// TestOverwrittenLockIsLost: a lock key that is no longer a hash (someone
// overwrote it) is a lost hold, reported once; its batch renews the others.
func TestOverwrittenLockIsLost(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	const lease = 3 * time.Second
	rec := newRecorder()
	holds := rec.holds(t, 2)
	lock(t, rc, lease, holds[1])
	require.NoError(t, rc.Do(context.Background(), rc.B().Set().Key(holds[0].Key).Value("x").Px(time.Minute).Build()).Error())
	w := start(t, rc, lease, nil)
	for _, h := range holds {
		require.NoError(t, w.Add(h))
	}
	require.Eventually(t, func() bool { return rec.losses(holds[0]) == 1 }, lease, 5*time.Millisecond, "the overwritten lock is lost")
	require.Eventually(t, func() bool { return rec.renewals() > 0 }, lease, 5*time.Millisecond, "its batch mate is renewed")
	assert.Zero(t, rec.losses(holds[1]))
	assert.Equal(t, 1, w.Len())
}

func TestLostAfterRedisRestartedEmpty(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	if !node.Controllable() {
		t.Skip("the Redis at REDIS_ADDR cannot be restarted")
	}
	rc := node.Client(t)
	const lease = 600 * time.Millisecond
	rec := newRecorder()
	holds := rec.holds(t, 150)
	lock(t, rc, time.Minute, holds...)
	var warns warnings
	w := start(t, rc, lease, slog.New(&warns))
	addAll(t, w, holds...)
	require.Eventually(t, func() bool { return rec.renewals() >= len(holds) }, 2*lease, 5*time.Millisecond, "first renewals")

	ctx := context.Background()
	require.NoError(t, node.Kill(ctx))
	redistest.Eventually(t, "a round fails while Redis is down", func(context.Context) error {
		if warns.count() == 0 {
			return errors.New("no failed round logged")
		}
		return nil
	})
	assert.Equal(t, len(holds), w.Len(), "holds dropped while Redis was down")
	require.NoError(t, node.Restart(ctx))

	// Len drops as a round's replies are settled; Lost runs just after.
	require.Eventually(t, func() bool {
		for _, h := range holds {
			if rec.losses(h) == 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "every hold lost after the restart")
	assert.Zero(t, w.Len(), "lost holds leave the watchdog")
	for i, h := range holds {
		assert.Equal(t, 1, rec.losses(h), "Lost calls of hold %d", i)
	}
}

func TestClusterBatchesKeepToOneSlot(t *testing.T) {
	if !hasBackend(t, redistest.Process) {
		t.Skip("a Cluster needs redis-server on PATH")
	}
	cluster := redistest.NewCluster(t, redistest.ClusterConfig{})
	rc := cluster.Client(t)

	// Half the keys in one slot, the rest spread over 50 tags. A cross-slot
	// batch would fail with CROSSSLOT and leave its holds unrenewed.
	const (
		lease = 3 * time.Second // a period of 1s: the holds share one or two ticks
		n     = 300
	)
	rec := newRecorder()
	holds := rec.holds(t, n)
	perSlot := map[uint16]int{}
	for i, h := range holds {
		tag := strconv.Itoa(i % 50)
		if i < n/2 {
			tag = "big"
		}
		h.Key = fmt.Sprintf("watchdog:{%s:%s}:%d", t.Name(), tag, i)
		perSlot[slot.Of(h.Key)]++
	}
	want := 0 // the fewest calls that keep to a slot and MaxBatch
	for _, count := range perSlot {
		want += (count + watchdog.MaxBatch - 1) / watchdog.MaxBatch
	}
	lock(t, rc, time.Minute, holds...)
	var warns warnings
	w := start(t, rc, lease, slog.New(&warns))
	addAll(t, w, holds...)

	// One plain client per master: a client left to detect the mode would
	// be a Cluster client and send INFO to any node.
	var masters []rueidis.Client
	for _, addr := range cluster.Addrs() {
		opt := redistest.ClientOption(addr)
		opt.ForceSingleClient = true
		mc, err := rueidis.NewClient(opt)
		require.NoError(t, err)
		t.Cleanup(mc.Close)
		masters = append(masters, mc)
	}
	masterCalls := func() (total int64) {
		for _, mc := range masters {
			total += renewCalls(t, mc)
		}
		return total
	}
	require.Eventually(t, func() bool { return rec.renewals() >= n }, 3*lease, 10*time.Millisecond, "first renewal of every hold")
	before := masterCalls()
	require.Eventually(t, func() bool { return rec.renewals() >= 2*n }, 3*lease, 10*time.Millisecond, "second renewal of every hold")
	renews := masterCalls() - before

	t.Logf("one renewal of %d holds in %d slots on %d masters: %d renew calls", n, len(perSlot), len(cluster.Addrs()), renews)
	assert.GreaterOrEqual(t, renews, int64(want), "renew calls for one renewal of every hold")
	// Holds added across a tick boundary make two rounds, and so up to
	// twice the calls; unsorted holds would make about n/2.
	assert.LessOrEqual(t, renews, int64(2*want), "renew calls for one renewal of every hold")
	assert.Zero(t, warns.count(), "renewal failures")
}

// hasBackend reports whether this machine offers backend.
func hasBackend(t *testing.T, backend string) bool {
	for _, b := range redistest.Backends(t) {
		if b == backend {
			return true
		}
	}
	return false
}
