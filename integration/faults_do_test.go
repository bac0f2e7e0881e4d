package integration

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// doLoss loses replies of Mutex.Do's script calls on one lock: after the
// call ran (ran), or before it was sent (unsent).
type doLoss struct {
	hash        string
	ran, unsent atomic.Int32 // calls still to lose the reply of, each way
}

// client returns a client on rc whose Do calls on the lock go through l.
// do.lua's calls are the script calls with two keys, the lock's hash first.
func (l *doLoss) client(rc rueidis.Client) *hookClient {
	return &hookClient{Client: rc, hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		isDo := len(cmd) > 4 && (cmd[0] == "EVALSHA" || cmd[0] == "EVAL") && cmd[2] == "2" && cmd[3] == l.hash
		switch {
		case !isDo:
			return run()
		case takeOne(&l.unsent):
			return lostReply()
		case takeOne(&l.ran):
			if res := run(); !ran(res) {
				l.ran.Add(1) // NOSCRIPT: lose the EVAL's reply instead
				return res
			}
			return lostReply()
		}
		return run()
	}}
}

// TestFaultLostDoReply: a Do whose reply was lost after it ran is resent,
// and the resend does not run the commands again (Do says their results
// were lost); a Do whose call never reached Redis is resent and runs once.
func TestFaultLostDoReply(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	loss := &doLoss{hash: lockKeys(name).Hash}
	mu := newRlock(t, loss.client(node.Client(t))).Mutex(name)
	key := mu.Key("n")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)

	loss.ran.Store(1)
	_, err = mu.Do(ctx, raw.B().Incr().Key(key).Build())
	assert.ErrorIs(t, err, rlock.ErrResultsLost, "the resend found the lost call ran")
	assert.Equal(t, "1", getKey(t, raw, key), "the commands ran once")

	loss.unsent.Store(2)
	res, err := mu.Do(ctx, raw.B().Incr().Key(key).Build())
	require.NoError(t, err, "two calls lost unsent, the third ran")
	n, err := res[0].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "and ran once")
	require.NoError(t, ctx.Err(), "the hold lives on")
}

// TestFaultDoReplicaAck: with WithReplicaAck, Do answers after the replica
// acknowledged; while the replica lags (paused), Do returns the results
// with ErrNotReplicated: the commands ran on the master.
func TestFaultDoReplicaAck(t *testing.T) {
	if redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a master and a replica it controls")
	}
	sen := redistest.NewSentinel(t, redistest.SentinelConfig{})
	rc := sen.Client(t)
	mu := newRlock(t, rc, rlock.WithReplicaAck(1, ackTimeout)).Mutex(redistest.LockName(t))
	key := mu.Key("v")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)

	_, err = mu.Do(ctx, rc.B().Set().Key(key).Value("acked").Build())
	require.NoError(t, err, "the replica acknowledged the write")

	replica := sen.Nodes()[1]
	require.NoError(t, replica.Pause(t.Context()))
	res, err := mu.Do(ctx, rc.B().Set().Key(key).Value("lagging").Build())
	require.NoError(t, replica.Resume(t.Context()))
	assert.ErrorIs(t, err, rlock.ErrNotReplicated, "no replica acknowledged in time")
	require.Len(t, res, 1, "the results come with the error")
	assert.NoError(t, res[0].Error())
	assert.Equal(t, "lagging", getKey(t, rc, key), "the commands ran on the master")
}

// getKey reads key, "" when it is missing.
func getKey(t *testing.T, rc rueidis.Client, key string) string {
	t.Helper()
	v, err := rc.Do(t.Context(), rc.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	require.NoError(t, err)
	return v
}
