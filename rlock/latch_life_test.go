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

// latchLinks is a latch on a node, set by a Client whose fence life is
// 150 ms (lease 50 ms, retry timeout 50 ms: a latch it alone counts to 0
// expires that soon), and a Client with the default fence life (slow),
// whose link to the node goes through p.
type latchLinks struct {
	p     *redistest.Proxy
	slow  *rlock.Client
	latch *rlock.CountDownLatch // the short-lived Client's
	name  string
}

// newLatchLinks sets a latch on node to n, and returns it with the links,
// up.
func newLatchLinks(t *testing.T, node *redistest.Node, n int) latchLinks {
	t.Helper()
	p := node.Proxy(t)
	rc, err := rueidis.NewClient(redistest.ClientOption(p.Addr()))
	require.NoError(t, err)
	l := latchLinks{p: p, slow: newRlock(t, rc), name: redistest.LockName(t)}
	t.Cleanup(rc.Close)
	fast := newRlock(t, node.Client(t), rlock.WithLeaseTime(50*time.Millisecond), rlock.WithRetryTimeout(50*time.Millisecond))
	l.latch = fast.CountDownLatch(l.name)
	set, err := l.latch.TrySetCount(t.Context(), n)
	require.NoError(t, err)
	require.True(t, set)
	_, err = l.slow.CountDownLatch(l.name).Count(t.Context()) // the link is up
	require.NoError(t, err)
	return l
}

// TestLatchCountDownCountsOnceAcrossFenceLives: a CountDown of a Client
// with the default fence life counts the latch 2 -> 1, its reply is lost
// and its resend held on a cut link, while a Client whose fence life is
// 150 ms counts 1 -> 0 and, once the latch at 0 would have expired after
// that life, sets it again. The resend then finds the first call counted:
// CountDown returns nil and the new latch keeps its count. (The latch at 0
// expired after the fence life of the Client that counted last, and the
// record of the first call with it: the resend counted the new latch too.)
func TestLatchCountDownCountsOnceAcrossFenceLives(t *testing.T) {
	l := newLatchLinks(t, redistest.Shared(t), 2)
	l.p.Delay(300 * time.Millisecond)
	counted := make(chan error, 1)
	go func() { counted <- l.slow.CountDownLatch(l.name).CountDown(t.Context()) }()
	redistest.Eventually(t, "the slow Client's first call counted", func(ctx context.Context) error {
		n, err := l.latch.Count(ctx)
		if err != nil {
			return err
		}
		return redistest.Exactly("count", n, 1)
	})
	l.p.Cut() // the reply is lost, and the resend held
	l.p.Reset()
	l.p.Delay(0)

	require.NoError(t, l.latch.CountDown(t.Context()), "1 -> 0")
	time.Sleep(500 * time.Millisecond) // beyond the fast Client's fence life
	set, err := l.latch.TrySetCount(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, set, "set again")
	l.p.Heal()
	require.NoError(t, receive(t, counted, "the slow CountDown"), "its first call counted")
	n, err := l.latch.Count(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the latch set again is not counted by the first one's request")
}

// TestLatchAwaitSeesAnOpeningThatExpired: an Await on a link that delays
// every byte 200 ms is woken by the CountDown that opens the latch, which
// then expires at 0 after the counting Client's fence life (150 ms) and is
// set again, all before the Await reads it. The Await returns: the latch
// opened after it began. (It compared how many times the latch opened, a
// count kept in the latch, which expired with it.)
func TestLatchAwaitSeesAnOpeningThatExpired(t *testing.T) {
	node := redistest.New(t, redistest.Config{}) // its own: the test counts its HMGETs
	l := newLatchLinks(t, node, 1)
	raw := node.Client(t)
	l.p.Delay(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	reads := redistest.ReadStats(t, raw).Calls["hmget"]
	awaited := make(chan error, 1)
	go func() { awaited <- l.slow.CountDownLatch(l.name).Await(ctx) }()
	redistest.Eventually(t, "the Await's first read ran", func(context.Context) error {
		return redistest.Exactly("HMGETs", redistest.ReadStats(t, raw).Calls["hmget"], reads+1)
	})
	require.NoError(t, l.latch.CountDown(t.Context()), "the latch opens")
	time.Sleep(250 * time.Millisecond) // beyond the fast Client's fence life: the latch at 0 expired
	set, err := l.latch.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, set, "set again, before the Await's next read arrives")
	require.NoError(t, receive(t, awaited, "the Await"), "the latch opened after the Await began")
}
