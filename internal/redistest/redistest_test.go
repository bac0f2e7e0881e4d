package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redisserver"
)

func TestMain(m *testing.M) { Main(m) }

// TestBackends exercises every control of a node on every backend.
func TestBackends(t *testing.T) {
	for _, backend := range Backends(t) {
		t.Run(backend, func(t *testing.T) {
			n := New(t, Config{Backend: backend})
			rc := n.Client(t)
			ctx := t.Context()
			require.NoError(t, rc.Do(ctx, rc.B().Set().Key("k").Value("v").Build()).Error())
			if !n.Controllable() {
				t.Skipf("%s: the server at REDIS_ADDR is not controlled by the harness; only its use was tested", backend)
			}

			require.NoError(t, n.Kill(ctx))
			require.Error(t, redisserver.Ping(ctx, n.Addr()), "a killed node answers nothing")
			require.NoError(t, n.Restart(ctx))
			// A fresh client: the test is of the node, not of rueidis
			// reconnecting (whose pooled commands race under -race after a
			// killed connection, inside rueidis v1.0.79).
			rc = n.Client(t)
			require.True(t, rueidis.IsRedisNil(rc.Do(ctx, rc.B().Get().Key("k").Build()).Error()),
				"a restarted node is empty, at the same address")

			require.NoError(t, n.Pause(ctx))
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			assert.Error(t, rc.Do(pctx, rc.B().Ping().Build()).Error(), "a paused node does not answer")
			cancel()
			require.NoError(t, n.Resume(ctx))
			require.NoError(t, rc.Do(ctx, rc.B().Ping().Build()).Error(), "a resumed node answers")
		})
	}
}

func TestProxy(t *testing.T) {
	n := Shared(t)
	p := n.Proxy(t)
	rc, err := rueidis.NewClient(ClientOption(p.Addr()))
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	ctx := t.Context()
	require.NoError(t, rc.Do(ctx, rc.B().Ping().Build()).Error())

	p.Delay(200 * time.Millisecond)
	start := time.Now()
	require.NoError(t, rc.Do(ctx, rc.B().Ping().Build()).Error())
	assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "both directions are delayed")
	p.Delay(0)

	p.Cut()
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	assert.Error(t, rc.Do(cctx, rc.B().Ping().Build()).Error(), "a cut link carries nothing")
	cancel()
	p.Heal()
	require.Eventually(t, func() bool { return rc.Do(ctx, rc.B().Ping().Build()).Error() == nil },
		10*time.Second, 50*time.Millisecond, "a healed link carries requests again")
}
