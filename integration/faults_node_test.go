package integration

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// faultNode starts a Redis of the test's own with extra redis-server args,
// for a fault that changes the whole server (its memory, its script cache,
// a script that blocks it). It prefers a child process, which starts in
// milliseconds, and skips when the only Redis is the one at REDIS_ADDR.
func faultNode(t *testing.T, args ...string) *redistest.Node {
	t.Helper()
	backends := slices.DeleteFunc(redistest.Backends(t), func(b string) bool { return b == redistest.External })
	if len(backends) == 0 {
		t.Skip("the Redis at REDIS_ADDR is shared: faults on the whole server need a Redis of the test's own")
	}
	backend := backends[0]
	if slices.Contains(backends, redistest.Process) {
		backend = redistest.Process
	}
	return redistest.New(t, redistest.Config{Backend: backend, Args: args})
}

// assertHoldCount checks the number of levels ctx's owner holds on mu.
func assertHoldCount(t *testing.T, ctx context.Context, mu *rlock.Mutex, want int) {
	t.Helper()
	n, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, n, "hold count")
}

// keyExists reports whether key is in Redis.
func keyExists(t *testing.T, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// keyGone is a condition for assert.Eventually: key is not in Redis.
func keyGone(t *testing.T, rc rueidis.Client, key string) func() bool {
	return func() bool {
		n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
		return err == nil && n == 0
	}
}

// hasRedisCode reports whether err wraps an error reply of Redis whose code is
// code ("OOM", "BUSY", ...). rueidis.IsRedisErr does not look through
// wrapping; errors.As does.
func hasRedisCode(err error, code string) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), code+" ")
}

// errorReplies returns how many error replies with code Redis has sent since
// it started (INFO errorstats).
func errorReplies(t *testing.T, rc rueidis.Client, code string) int {
	t.Helper()
	info, err := rc.Do(t.Context(), rc.B().Info().Section("errorstats").Build()).ToString()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\r\n") {
		if count, ok := strings.CutPrefix(line, "errorstat_"+code+":count="); ok {
			n, err := strconv.Atoi(count)
			require.NoError(t, err, "parse %q", line)
			return n
		}
	}
	return 0
}
