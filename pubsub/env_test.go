package pubsub

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// A wake-up is expected within wakeWithin, which only a hang crosses, on a
// loaded machine too; its absence is checked for quietFor, a pause that is
// the thing under test (nothing announces a wake-up that will not come).
const (
	wakeWithin = redistest.Patience
	quietFor   = 200 * time.Millisecond
)

// env is a Subscriber under test with a second client that publishes and
// inspects Redis.
type env struct {
	sharded bool
	node    *redistest.Node
	rc      rueidis.Client // the Subscriber's
	admin   rueidis.Client // publishes and inspects, never subscribes
	subs    *Subscriber
}

// forEachMode runs test with plain and with sharded pub/sub, each on node
// (nil: the package's shared Redis). Redis 7 serves SSUBSCRIBE and SPUBLISH
// on a standalone server too.
func forEachMode(t *testing.T, fresh bool, test func(t *testing.T, e *env)) {
	for _, sharded := range []bool{false, true} {
		name := "plain"
		if sharded {
			name = "sharded"
		}
		t.Run(name, func(t *testing.T) {
			var node *redistest.Node
			if fresh {
				node = redistest.New(t, redistest.Config{})
			} else {
				node = redistest.Shared(t)
			}
			test(t, newEnv(t, node, sharded, node.Client(t)))
		})
	}
}

// newEnv returns a Subscriber on rc, a client of node, closed when t ends.
func newEnv(t *testing.T, node *redistest.Node, sharded bool, rc rueidis.Client) *env {
	e := &env{sharded: sharded, node: node, rc: rc, admin: node.Client(t)}
	e.subs = New(e.rc, sharded, 0, slog.New(slog.NewTextHandler(t.Output(), nil)), envID)
	t.Cleanup(func() { require.NoError(t, e.subs.Close()) })
	return e
}

// envID names every test Subscriber in messages addressed to it.
const envID = "subscriber-under-test"

// channelName is a channel unique to the running test.
func channelName(t *testing.T, suffix string) string {
	return strings.ReplaceAll(t.Name(), "/", ":") + ":" + suffix
}

// subscribe subscribes a waiter that leaves when t ends.
func (e *env) subscribe(t *testing.T, channel string) *Waiter {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wakeWithin)
	defer cancel()
	w, err := e.subs.Subscribe(ctx, channel)
	require.NoError(t, err, "Subscribe(%s)", channel)
	t.Cleanup(func() { w.Done(false) })
	return w
}

// publish sends an unlock message on channel, as release.lua does, and
// returns how many subscribed connections received it.
func (e *env) publish(t *testing.T, channel string) int64 {
	t.Helper()
	return e.publishMessage(t, channel, "unlocked")
}

// publishMessage publishes message on channel as a lock script does.
func (e *env) publishMessage(t *testing.T, channel, message string) int64 {
	t.Helper()
	cmd := e.admin.B().Publish().Channel(channel).Message(message).Build()
	if e.sharded {
		cmd = e.admin.B().Spublish().Channel(channel).Message(message).Build()
	}
	n, err := e.admin.Do(t.Context(), cmd).AsInt64()
	require.NoError(t, err)
	return n
}

// numsub is the number of connections subscribed to channel (PUBSUB NUMSUB,
// or PUBSUB SHARDNUMSUB when sharded).
func (e *env) numsub(t *testing.T, channel string) int64 {
	t.Helper()
	n, err := e.countSubscribers(t.Context(), channel)
	require.NoError(t, err)
	return n
}

// unsubscribed reports whether Redis counts no subscriber on channel; it
// suits require.Eventually, which must not fail the test from its
// goroutine.
func (e *env) unsubscribed(ctx context.Context, channel string) bool {
	n, err := e.countSubscribers(ctx, channel)
	return err == nil && n == 0
}

func (e *env) countSubscribers(ctx context.Context, channel string) (int64, error) {
	cmd := e.admin.B().PubsubNumsub().Channel(channel).Build()
	if e.sharded {
		cmd = e.admin.B().PubsubShardnumsub().Channel(channel).Build()
	}
	reply, err := e.admin.Do(ctx, cmd).ToArray()
	if err != nil {
		return 0, err
	}
	if len(reply) != 2 {
		return 0, fmt.Errorf("PUBSUB reply %v: want [channel count]", reply)
	}
	return reply[1].AsInt64()
}

// requireGone waits until the Subscriber holds no channel and Redis counts
// no subscriber on any of channels.
func (e *env) requireGone(t *testing.T, channels ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return e.subs.Channels() == 0 }, wakeWithin, 5*time.Millisecond,
		"the Subscriber still holds channels")
	for _, ch := range channels {
		require.Eventually(t, func() bool { return e.unsubscribed(t.Context(), ch) }, wakeWithin, 5*time.Millisecond,
			"Redis still counts a subscriber on %s", ch)
	}
}

// subscribedClients returns the ids of the connections that hold a plain or
// sharded subscription (CLIENT LIST fields sub and ssub).
func (e *env) subscribedClients(t *testing.T) []int64 {
	t.Helper()
	list, err := e.admin.Do(t.Context(), e.admin.B().ClientList().Build()).ToString()
	require.NoError(t, err)
	var ids []int64
	list = strings.TrimPrefix(list, "txt:") // RESP3 sends CLIENT LIST as a verbatim string
	for line := range strings.Lines(list) {
		fields := map[string]string{}
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["id"] == "" {
			continue
		}
		if fields["sub"] != "0" || (fields["ssub"] != "" && fields["ssub"] != "0") {
			id, err := strconv.ParseInt(fields["id"], 10, 64)
			require.NoError(t, err)
			ids = append(ids, id)
		}
	}
	return ids
}

// woken reports whether w has a wake-up pending, and takes it.
func woken(w *Waiter) bool {
	select {
	case <-w.Wake():
		return true
	default:
		return false
	}
}

// requireWoken waits for a wake-up of w and takes it.
func requireWoken(t *testing.T, w *Waiter, msgAndArgs ...any) {
	t.Helper()
	timer := time.NewTimer(wakeWithin)
	defer timer.Stop()
	select {
	case <-w.Wake():
	case <-timer.C:
		require.Fail(t, "waiter not woken", msgAndArgs...)
	}
}

// requireQuiet checks that none of ws is woken for a while.
func requireQuiet(t *testing.T, ws ...*Waiter) {
	t.Helper()
	require.Never(t, func() bool {
		for _, w := range ws {
			if len(w.Wake()) > 0 {
				return true
			}
		}
		return false
	}, quietFor, 5*time.Millisecond, "a waiter was woken that should not be")
}
