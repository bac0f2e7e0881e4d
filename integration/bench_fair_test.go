package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
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
//	Floor/publish-idle=2ms-pipelined
//	                          the same sent through a client in pipelining
//	                          mode, as a Client's is once it has waited
//	                          (pipelined)
//	Floor/hand-over-idle=2ms  the same with the least script that hands a
//	                          fair lock over (leastHandOver): what a handoff
//	                          with a fencing token costs at least
//	Floor/fair-release-idle=2ms
//	                          the same with rlock's fair release script,
//	                          sent raw: Redis's part of a FairMutex handoff
//	                          (benchFairReleaseFloor)
//	Handoff/waiters=8/<peer>  Unlock to the next holder's Lock in a relay of
//	                          nine owners in two Clients (handoff_bench_test.go)
//	Handoff/clients=9/<peer>  the same, each owner in a Client of its own
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
	b.Run("Floor/publish-idle="+relayHold.String()+"-pipelined", func(b *testing.B) { benchPublishFloor(b, node, pipelined(b, node)) })
	b.Run("Floor/hand-over-idle="+relayHold.String(), func(b *testing.B) { benchHandOverFloor(b, node, rc) })
	b.Run("Floor/fair-release-idle="+relayHold.String(), func(b *testing.B) { benchFairReleaseFloor(b, node, rc) })
	for _, p := range fairPeers {
		b.Run("Handoff/waiters=8/"+p.name, func(b *testing.B) { benchmarkRelay(b, node, p, 8, 2) })
	}
	for _, p := range fairPeers {
		b.Run("Handoff/clients=9/"+p.name, func(b *testing.B) { benchmarkRelay(b, node, p, 8, 9) })
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

// leastHandOver is the least script that hands a fair lock over inside
// Redis: it frees the lock hash KEYS[1] of its holder ARGV[1], takes the
// waiter longest in the list KEYS[3], gives it the next token of the
// counter KEYS[2] and the lock for 30 s, and publishes both on channel
// KEYS[4]. rlock's fair_release does this and what keeps it safe besides
// (sequence numbers, fences, the queue's own leases, the heir).
var leastHandOver = rueidis.NewLuaScript(`
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('del', KEYS[1])
local head = redis.call('lpop', KEYS[3])
if not head then return 0 end
local token = redis.call('incr', KEYS[2])
redis.call('hset', KEYS[1], head, 1)
redis.call('pexpire', KEYS[1], 30000)
return redis.call('publish', KEYS[4], head .. ' ' .. token)`)

// benchPublishFloor measures, after relayHold of idleness each time, how
// long after an EVALSHA of publishOne is sent through rc a goroutine
// blocked on a channel is woken by a subscriber on another client: the
// floor of a handoff made inside Redis, one round trip's worth of network
// and one goroutine's wake-up more than Floor/roundtrip-idle.
func benchPublishFloor(b *testing.B, node *redistest.Node, rc rueidis.Client) {
	channel := benchName(b)
	benchWakeFloor(b, node, channel, nil, func(ctx context.Context) error {
		return publishOne.Exec(ctx, rc, []string{channel}, []string{"x"}).Error()
	})
}

// benchHandOverFloor is benchPublishFloor with leastHandOver, on a lock
// with one waiter queued: the floor of a handoff that gives the next
// holder a fencing token.
func benchHandOverFloor(b *testing.B, node *redistest.Node, rc rueidis.Client) {
	name := benchName(b)
	hash, counter, queue, channel := name, name+":token", name+":queue", name+":channel"
	arm := func(ctx context.Context) error {
		return errors.Join(
			rc.Do(ctx, rc.B().Hset().Key(hash).FieldValue().FieldValue("holder", "1").Build()).Error(),
			rc.Do(ctx, rc.B().Rpush().Key(queue).Element("waiter").Build()).Error())
	}
	benchWakeFloor(b, node, channel, arm, func(ctx context.Context) error {
		return leastHandOver.Exec(ctx, rc, []string{hash, counter, queue, channel}, []string{"holder"}).Error()
	})
}

// benchFairReleaseFloor is benchHandOverFloor with rlock's own scripts
// sent raw: each time, one owner takes the lock and another queues
// (lua.FairAcquire), and what is measured is the first one's release
// (lua.FairRelease) handing the lock to the second by a message to its
// Client's inbox, as a release hands over to a waiter of another Client.
// The gap to Floor/hand-over-idle is what the script does beyond the
// least hand-over: the checks that keep it safe.
func benchFairReleaseFloor(b *testing.B, node *redistest.Node, rc rueidis.Client) {
	const holder, waiter = "holderclient:1", "waiterclient:1"
	seq := 0
	r := rawLock{rc: rc, acquire: lua.FairAcquire, release: lua.FairRelease, k: keys.New("bench:", benchName(b)), seq: &seq}
	// Each time the waiter, which the last release made the holder, lets
	// go; the holder takes the free lock, and the waiter queues behind it.
	arm := func(ctx context.Context) error {
		if _, err := r.free(ctx, waiter); err != nil {
			return err
		}
		if got, err := r.take(ctx, holder, "0"); err != nil || got[0] != int64(lua.Granted) {
			return fmt.Errorf("holder's acquire: %v %w", got, err)
		}
		if got, err := r.take(ctx, waiter, "1"); err != nil || got[0] != int64(lua.Refused) {
			return fmt.Errorf("waiter's acquire: %v %w", got, err)
		}
		return nil
	}
	benchWakeFloor(b, node, r.k.Channel+"@waiterclient", arm, func(ctx context.Context) error {
		got, err := r.free(ctx, holder)
		if err == nil && got[0] != int64(lua.Freed) {
			err = fmt.Errorf("release reply %v", got)
		}
		return err
	})
}

// pipelined returns a rueidis client of node whose connections run in
// pipelining mode, as a Client's do once it has waited: rueidis sends a
// call on the caller's goroutine and reads its reply there only until a
// connection first has two calls in flight or a subscription; from then on
// a writer and a reader goroutine of the connection carry every call.
func pipelined(b *testing.B, node *redistest.Node) rueidis.Client {
	rc := newRueidis(b, node.Addr())
	ctx := benchContext(b)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for j := range 16 {
				key := fmt.Sprint("pipelined:", i, ":", j) // keys of many slots: calls go to every connection
				require.NoError(b, trivial.Exec(ctx, rc, []string{key}, nil).Error())
			}
		})
	}
	wg.Wait()
	return rc
}

// benchWakeFloor measures, after relayHold of idleness each time, how long
// after send began a goroutine blocked on a channel is woken by a
// subscriber to channel, on a client of its own, for the message send has
// Redis publish there. arm, if not nil, sets up each time before the idle.
func benchWakeFloor(b *testing.B, node *redistest.Node, channel string, arm func(ctx context.Context) error, send func(ctx context.Context) error) {
	ctx := benchContext(b)
	sub := newRueidis(b, node.Addr())
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
		n, err := sub.Do(ctx, sub.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] == 1
	}, 5*time.Second, time.Millisecond, "the subscriber subscribed")
	latencies := make([]time.Duration, 0, 1024)
	for b.Loop() {
		if arm != nil {
			require.NoError(b, arm(ctx))
		}
		time.Sleep(relayHold) // the thing measured: a wake-up after the connection idled
		start := time.Now()
		require.NoError(b, send(ctx))
		latencies = append(latencies, (<-at).Sub(start))
	}
	reportLatencies(b, latencies)
}
