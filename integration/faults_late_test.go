package integration

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// lateOriginal holds back the first acquire call on one lock, as a
// connection that stalls with the request in its buffer: the caller sees
// the reply lost, and the call reaches Redis only when the test says so,
// after whatever the caller did next.
type lateOriginal struct {
	hash    string
	onHold  func() // called once the call is held back, before the caller hears
	mu      sync.Mutex
	held    []string // the held-back command, copied: rueidis recycles its own
	claimed bool
}

func (l *lateOriginal) client(rc rueidis.Client) *hookClient {
	return &hookClient{Client: rc, hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		if scriptOn(cmd, l.hash) != acquireScript || cmd[0] != "EVALSHA" {
			return run()
		}
		l.mu.Lock()
		first := !l.claimed
		if first {
			l.claimed, l.held = true, slices.Clone(cmd)
		}
		l.mu.Unlock()
		if !first {
			return run()
		}
		if l.onHold != nil {
			l.onHold()
		}
		return lostReply()
	}}
}

// deliver sends the held-back call to Redis now and returns the script's
// reply: {2, 0} is its refusal as a stale copy.
func (l *lateOriginal) deliver(t *testing.T, rc rueidis.Client) []int64 {
	t.Helper()
	l.mu.Lock()
	cmd := l.held
	l.mu.Unlock()
	require.NotEmpty(t, cmd, "an acquire was held back")
	res := rc.Do(context.Background(), rc.B().Arbitrary(cmd...).Build())
	if !ran(res) { // the script is not loaded: send its text, as rueidis would
		cmd[0], cmd[1] = "EVAL", lua.Acquire.Text()
		res = rc.Do(context.Background(), rc.B().Arbitrary(cmd...).Build())
	}
	reply, err := res.AsIntSlice()
	require.NoError(t, err)
	return reply
}

// TestFaultLateOriginal delivers an acquire after its caller moved on: after
// the resend that took the lock and the Unlock that freed it, and after a
// caller gave up on its only call. Each time the copy is refused as stale
// and the lock stays free, so another owner takes it at once.
func TestFaultLateOriginal(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)

	t.Run("after resend and unlock", func(t *testing.T) {
		name := redistest.LockName(t)
		late := &lateOriginal{hash: lockKeys(name).Hash}
		mu := newRlock(t, late.client(node.Client(t))).Mutex(name)
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err, "the resend took the lock")
		require.NoError(t, mu.Unlock(ctx))

		assert.Equal(t, []int64{2, 0}, late.deliver(t, raw), "the late original is refused as stale")
		assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "the lock stays free")
		requireFree(t, node, name)
	})

	t.Run("after give-up", func(t *testing.T) {
		name := redistest.LockName(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		late := &lateOriginal{hash: lockKeys(name).Hash, onHold: cancel}
		mu := newRlock(t, late.client(node.Client(t))).Mutex(name)
		_, err := mu.Lock(ctx)
		require.ErrorIs(t, err, context.Canceled, "the caller gave up while its call was out")

		assert.Equal(t, []int64{2, 0}, late.deliver(t, raw), "the late original is refused as stale")
		assert.False(t, keyExists(t, raw, lockKeys(name).Hash), "nothing holds the lock")
		requireFree(t, node, name)
	})
}

// requireFree takes and leaves the lock called name from a Client of its
// own with a single attempt: it must be free.
func requireFree(t *testing.T, node *redistest.Node, name string) {
	t.Helper()
	other := newRlock(t, node.Client(t)).Mutex(name)
	octx, ok, err := other.TryLock(t.Context(), 0, 0)
	require.NoError(t, err)
	require.True(t, ok, "another owner takes the lock at once")
	require.NoError(t, other.Unlock(octx))
}
