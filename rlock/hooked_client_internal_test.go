package rlock

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

// requestHook stands between a Client and Redis for the Mutex scripts'
// calls on one lock: acquire and release, when set, answer such a call in
// place of Redis (send runs it for real), and afterAcquire runs once an
// acquire was answered. Every other command goes through.
type requestHook struct {
	rueidis.Client
	hash         string
	acquire      func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult
	afterAcquire func(reply []int64)
	release      func(ctx context.Context, send func() rueidis.RedisResult) rueidis.RedisResult
	mu           sync.Mutex
}

func (h *requestHook) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[3] == h.hash {
		switch args[1] {
		case mutexKind.acquire.SHA1(), mutexKind.acquire.Text():
			h.mu.Lock()
			answer, f := h.acquire, h.afterAcquire
			h.mu.Unlock()
			send := func() rueidis.RedisResult { return h.Client.Do(ctx, cmd) }
			var res rueidis.RedisResult
			if answer != nil {
				res = answer(ctx, send)
			} else {
				res = send()
			}
			if f != nil {
				reply, _ := res.AsIntSlice()
				f(reply)
			}
			return res
		case mutexKind.release.SHA1(), mutexKind.release.Text():
			h.mu.Lock()
			f := h.release
			h.mu.Unlock()
			if f != nil {
				return f(ctx, func() rueidis.RedisResult { return h.Client.Do(ctx, cmd) })
			}
		}
	}
	return h.Client.Do(ctx, cmd)
}

// newHookedClient returns a Client through a requestHook on a fresh lock
// name, the hook, the name, the lock's keys, and a raw client of the same Redis.
func newHookedClient(t *testing.T, opts ...Option) (*Client, *requestHook, string, keys.Keys, rueidis.Client) {
	node := redistest.Shared(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	ks := keys.New(DefaultKeyPrefix, name)
	for _, sc := range []*lua.Script{mutexKind.acquire, mutexKind.release} {
		require.NoError(t, raw.Do(t.Context(), raw.B().ScriptLoad().Script(sc.Text()).Build()).Error())
	}
	hook := &requestHook{Client: node.Client(t), hash: ks.Hash}
	c, err := New(hook, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.Close())
		raw.Do(context.Background(), raw.B().Del().Key(ks.Hash).Build())
	})
	return c, hook, name, ks, raw
}
