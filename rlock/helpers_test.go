package rlock_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// The Redis side of the tests (setups, unique names, subscriber and key
// checks) is in internal/redistest, shared with integration's tests. These
// two need package rlock, which redistest cannot import: rlock's own
// package-internal tests import redistest.

// newRlock returns an rlock Client on rc, closed when t ends.
func newRlock(t *testing.T, rc rueidis.Client, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// sharedClient returns an rlock Client on the package's shared Redis,
// closed when t ends.
func sharedClient(t *testing.T, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	return newRlock(t, redistest.Shared(t).Client(t), opts...)
}

// lockKeys are the Redis names of lock name under the default prefix.
func lockKeys(name string) keys.Keys {
	return keys.New(rlock.DefaultKeyPrefix, name)
}
