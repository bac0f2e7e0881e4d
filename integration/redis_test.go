package integration

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/rlock"
)

// lockKeys are the Redis keys of lock name under the default prefix.
func lockKeys(name string) keys.Keys {
	return keys.New(rlock.DefaultKeyPrefix, name)
}

// lockHash is the Redis hash of lock name under the default prefix.
func lockHash(name string) string {
	return lockKeys(name).Hash
}

// lockChannel is the unlock channel of lock name under the default prefix.
func lockChannel(name string) string {
	return lockKeys(name).Channel
}

// keysOf lists which of lock name's lasting keys (its hash and its fencing
// counter, under the default prefix) exist. Fences are left out: they are
// written only after a lost reply, and expire on their own.
func keysOf(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	var out []string
	for _, key := range []string{lockHash(name), lockKeys(name).Token} {
		n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		if n == 1 {
			out = append(out, key)
		}
	}
	return out
}

// assertNoSubscribers waits until nobody listens on lock name's unlock
// channel any more, plain or sharded.
func assertNoSubscribers(t *testing.T, rc rueidis.Client, name string) {
	t.Helper()
	channel := lockChannel(name)
	count := func(cmd rueidis.Completed) int64 {
		res, err := rc.Do(t.Context(), cmd).AsIntMap()
		require.NoError(t, err)
		return res[channel]
	}
	require.Eventually(t, func() bool {
		plain := int64(0)
		if rc.Mode() != rueidis.ClientModeCluster {
			plain = count(rc.B().PubsubNumsub().Channel(channel).Build())
		}
		return plain+count(rc.B().PubsubShardnumsub().Channel(channel).Build()) == 0
	}, 5*time.Second, 20*time.Millisecond, "subscribers left on %s", channel)
}
