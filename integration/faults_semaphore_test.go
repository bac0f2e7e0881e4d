package integration

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// Lost replies and given-up requests on a Semaphore and a CountDownLatch,
// through a hookClient: a request counts once however often it is resent,
// and one whose caller gave up never counts later, also when its copy
// reaches Redis after the caller returned.

// tapMode is what a scriptTap does to the next call it matches.
type tapMode int

const (
	tapPass   tapMode = iota
	tapLose           // run the call, then lose its reply
	tapCancel         // run the call, cancel the caller, then lose its reply
	tapKeep           // keep a copy unsent, cancel the caller, and lose it
)

// scriptTap hooks the script calls whose first two keys are key1 and key2.
type scriptTap struct {
	key1, key2 string
	cancel     context.CancelFunc // the caller's, for tapCancel and tapKeep

	mu   sync.Mutex
	next []tapMode  // what to do with the next matching calls, in order
	kept [][]string // copies of the calls tapKeep kept
}

func (s *scriptTap) plan(modes ...tapMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = append(s.next, modes...)
}

func (s *scriptTap) client(rc rueidis.Client) *hookClient {
	return &hookClient{Client: rc, hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		if len(cmd) < 5 || (cmd[0] != "EVALSHA" && cmd[0] != "EVAL") || cmd[3] != s.key1 || cmd[4] != s.key2 {
			return run()
		}
		s.mu.Lock()
		mode := tapPass
		if len(s.next) > 0 {
			mode, s.next = s.next[0], s.next[1:]
		}
		if mode == tapKeep {
			s.kept = append(s.kept, slices.Clone(cmd))
		}
		s.mu.Unlock()
		switch mode {
		case tapPass:
			return run()
		case tapKeep:
			s.cancel()
			return lostReply()
		}
		if res := run(); !ran(res) {
			s.plan(mode) // NOSCRIPT: the EVAL comes next
			return res
		}
		if mode == tapCancel {
			s.cancel()
		}
		return lostReply()
	}}
}

// replay sends a kept call to Redis as a late copy would arrive, and
// returns the script's reply.
func replay(t *testing.T, rc rueidis.Client, cmd []string) []int64 {
	t.Helper()
	n, err := strconv.Atoi(cmd[2])
	require.NoError(t, err, "numkeys")
	reply, err := rc.Do(t.Context(), rc.B().Arbitrary(cmd[0], cmd[1], cmd[2]).Keys(cmd[3:3+n]...).Args(cmd[3+n:]...).Build()).AsIntSlice()
	require.NoError(t, err, "the late copy runs")
	return reply
}

// TestFaultSemaphoreLostReplies: the replies of two acquires with one
// context and of two releases are lost after the scripts ran: the owner
// holds exactly two permits, then none.
func TestFaultSemaphoreLostReplies(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := keys.NewSemaphore(rlock.DefaultKeyPrefix, name)
	acquires, releases := &scriptTap{key1: k.Hash, key2: k.Token}, &scriptTap{key1: k.Hash, key2: k.Channel}
	sem := newRlock(t, releases.client(acquires.client(node.Client(t)))).Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)

	acquires.plan(tapLose, tapLose)
	ctx, err := sem.Acquire(t.Context())
	require.NoError(t, err)
	_, err = sem.Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, available(t, sem), "two permits taken, once each")
	releases.plan(tapLose, tapLose)
	require.NoError(t, sem.Release(ctx))
	assert.Equal(t, 2, available(t, sem), "one permit given back, once")
	require.NoError(t, ctx.Err())
	require.NoError(t, sem.Release(ctx))
	assert.Equal(t, 3, available(t, sem))
	assert.True(t, keyGone(t, raw, k.Hash)(), "no holder left")
}

// TestFaultSemaphoreGivenUp: an acquire that ran but whose caller gave up
// before the reply is taken back; one that never reached Redis before its
// caller gave up is refused when its copy arrives later.
func TestFaultSemaphoreGivenUp(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := keys.NewSemaphore(rlock.DefaultKeyPrefix, name)
	acquires := &scriptTap{key1: k.Hash, key2: k.Token}
	sem := newRlock(t, acquires.client(node.Client(t))).Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 1)
	require.NoError(t, err)
	warm, err := sem.Acquire(t.Context()) // the scripts are in Redis's cache
	require.NoError(t, err)
	require.NoError(t, sem.Release(warm))

	for _, mode := range []tapMode{tapCancel, tapKeep} {
		ctx, cancel := context.WithCancel(t.Context())
		acquires.cancel = cancel
		acquires.plan(mode)
		_, err = sem.Acquire(ctx)
		assert.ErrorIs(t, err, context.Canceled, "mode %d: the caller gave up", mode)
		assert.Equal(t, 1, available(t, sem), "mode %d: the permit is free", mode)
	}
	require.Len(t, acquires.kept, 1)
	assert.Equal(t, []int64{2, 0}, replay(t, raw, acquires.kept[0]), "the late copy is refused as stale")
	assert.Equal(t, 1, available(t, sem), "the late copy took nothing")
	assert.True(t, keyGone(t, raw, k.Hash)(), "no holder left")
}

// TestFaultLatchCountsOnce: CountDowns whose replies are lost count once;
// one whose caller gave up after it ran counts and says so; one whose
// caller gave up before it reached Redis fails and never counts, its late
// copy refused.
func TestFaultLatchCountsOnce(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	k := keys.NewLatch(rlock.DefaultKeyPrefix, name)
	tap := &scriptTap{key1: k.Hash, key2: k.Channel}
	latch := newRlock(t, tap.client(node.Client(t))).CountDownLatch(name)
	_, err := latch.TrySetCount(t.Context(), 10)
	require.NoError(t, err)
	count := func() int {
		n, err := latch.Count(t.Context())
		require.NoError(t, err)
		return n
	}

	tap.plan(tapLose, tapLose)
	require.NoError(t, latch.CountDown(t.Context()), "a resend after a lost reply")
	assert.Equal(t, 9, count(), "counted once, though it ran twice")

	ctx, cancel := context.WithCancel(t.Context())
	tap.cancel = cancel
	tap.plan(tapCancel)
	require.NoError(t, latch.CountDown(ctx), "given up after it ran: the settling call learns it counted")
	assert.Equal(t, 8, count())

	ctx, cancel = context.WithCancel(t.Context())
	tap.cancel = cancel
	tap.plan(tapKeep)
	assert.ErrorIs(t, latch.CountDown(ctx), context.Canceled, "given up before it reached Redis")
	assert.Equal(t, 8, count(), "it did not count")
	require.Len(t, tap.kept, 1)
	assert.Equal(t, []int64{2, 0}, replay(t, raw, tap.kept[0]), "its late copy is refused as stale")
	assert.Equal(t, 8, count(), "and never counts")
}
