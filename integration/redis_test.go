package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

// keysOf lists the keys of lock name under the default prefix, sorted,
// leaving out request latches (they expire on their own).
func keysOf(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	all, err := rc.Do(t.Context(), rc.B().Keys().Pattern("rlock:{"+name+"}*").Build()).AsStrSlice()
	require.NoError(t, err)
	out := slices.DeleteFunc(all, func(k string) bool { return strings.Contains(k, ":latch:") })
	slices.Sort(out)
	return out
}

// assertNoSubscribers waits until nobody listens on lock name's unlock
// channel any more.
func assertNoSubscribers(t *testing.T, rc rueidis.Client, name string) {
	t.Helper()
	channel := "rlock:{" + name + "}:unlock"
	require.Eventually(t, func() bool {
		res, err := rc.Do(t.Context(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && res[channel] == 0
	}, 5*time.Second, 20*time.Millisecond, "subscribers left on %s", channel)
}
