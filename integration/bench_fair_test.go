package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// BenchmarkFair measures FairMutex beside Mutex and the peers, in one run
// against one local Redis (as BenchmarkCompare):
//
//	Floor/roundtrip           one EVALSHA of `return 1`, back to back
//	Floor/roundtrip-idle=2ms  the same after relayHold of idleness, as a
//	                          relay's Unlock finds the connection
//	Floor/publish-idle=2ms    an EVALSHA that publishes, after relayHold of
//	                          idleness, to a goroutine woken by a subscriber
//	                          on another client: what any handoff inside
//	                          Redis costs at least (benchPublishFloor)
//	Handoff/waiters=8/<peer>  Unlock to the next holder's Lock in a relay of
//	                          nine owners (handoff_bench_test.go)
//	HotLock/<peer>            16 goroutines on one lock: acquisitions/s and
//	                          fairness min/max (bench_hotlock_test.go)
//
//	go test ./integration -run '^$' -bench Fair -benchtime 3s -count 1
func BenchmarkFair(b *testing.B) {
	node := benchNode(b)
	fairPeers := append([]peer{{"rlock-fair", openRlockFair, true}}, peers...)
	rc := newRueidis(b, node.Addr())
	b.Run("Floor/roundtrip", func(b *testing.B) {
		ctx := benchContext(b)
		for b.Loop() {
			require.NoError(b, trivial.Exec(ctx, rc, nil, nil).Error())
		}
	})
	b.Run("Floor/roundtrip-idle="+relayHold.String(), func(b *testing.B) {
		ctx := benchContext(b)
		latencies := make([]time.Duration, 0, 1024)
		for b.Loop() {
			time.Sleep(relayHold) // the thing measured: a round trip after the connection idled
			start := time.Now()
			require.NoError(b, trivial.Exec(ctx, rc, nil, nil).Error())
			latencies = append(latencies, time.Since(start))
		}
		reportLatencies(b, latencies)
	})
	b.Run("Floor/publish-idle="+relayHold.String(), func(b *testing.B) { benchPublishFloor(b, node, rc) })
	for _, p := range fairPeers {
		b.Run("Handoff/waiters=8/"+p.name, func(b *testing.B) { benchmarkRelay(b, node, p, 8, 2) })
	}
	for _, p := range fairPeers {
		b.Run("HotLock/"+p.name, func(b *testing.B) { benchmarkHotLock(b, node, p) })
	}
}

// rlockFairLocker takes FairMutex locks.
type rlockFairLocker struct{ rlockLocker }

func openRlockFair(b *testing.B, addr string, lease time.Duration) locker {
	return rlockFairLocker{openRlock(b, addr, lease).(rlockLocker)}
}

func (l rlockFairLocker) lock(ctx context.Context, name string) (func() error, error) {
	mu := l.c.FairMutex(name)
	lctx, err := mu.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return lostIf(mu.Unlock(lctx), rlock.ErrNotHeld) }, nil
}

// publishOne is the least script that hands a message over: it publishes
// ARGV[1] on channel KEYS[1].
var publishOne = rueidis.NewLuaScript("return redis.call('publish', KEYS[1], ARGV[1])")

// benchPublishFloor measures, after relayHold of idleness each time, how
// long after an EVALSHA of publishOne is sent through rc a goroutine
// blocked on a channel is woken by a subscriber on another client: the
// floor of a handoff made inside Redis, one round trip's worth of network
// and one goroutine's wake-up more than Floor/roundtrip-idle.
func benchPublishFloor(b *testing.B, node *redistest.Node, rc rueidis.Client) {
	ctx := benchContext(b)
	sub := newRueidis(b, node.Addr())
	channel := benchName(b)
	woken := make(chan struct{}, 1)
	rctx, cancel := context.WithCancel(ctx)
	received := make(chan error, 1)
	go func() {
		received <- sub.Receive(rctx, sub.B().Subscribe().Channel(channel).Build(), func(rueidis.PubSubMessage) {
			woken <- struct{}{}
		})
	}()
	at := make(chan time.Time, 1) // when a goroutine woke for the message
	go func() {
		for range woken {
			at <- time.Now()
		}
	}()
	defer func() {
		cancel()
		<-received
		close(woken)
	}()
	require.Eventually(b, func() bool {
		n, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] == 1
	}, 5*time.Second, time.Millisecond, "the subscriber subscribed")
	latencies := make([]time.Duration, 0, 1024)
	for b.Loop() {
		time.Sleep(relayHold) // the thing measured: a wake-up after the connection idled
		start := time.Now()
		require.NoError(b, publishOne.Exec(ctx, rc, []string{channel}, []string{"x"}).Error())
		latencies = append(latencies, (<-at).Sub(start))
	}
	reportLatencies(b, latencies)
}
