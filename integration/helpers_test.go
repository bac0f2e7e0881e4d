package integration

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/rlock"
)

// The Redis side of the tests (setups, unique names, subscriber and key
// checks) is in internal/redistest, shared with rlock's own tests.
// newRlock and lockKeys are written again in rlock/helpers_test.go, because
// redistest cannot import package rlock.

// watchdogLease is short so that renewals happen often in a test.
const watchdogLease = time.Second

// newRlock returns an rlock Client on rc, closed when t ends.
func newRlock(t *testing.T, rc rueidis.Client, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// lockKeys are the Redis names of lock name under the default prefix.
func lockKeys(name string) keys.Keys {
	return keys.New(rlock.DefaultKeyPrefix, name)
}

// rwKeys are the Redis names of read-write lock name under the default
// prefix.
func rwKeys(name string) keys.Keys {
	return keys.NewRW(rlock.DefaultKeyPrefix, name)
}

// fairKeys are the Redis names of fair lock name under the default prefix.
func fairKeys(name string) keys.Keys {
	return keys.NewFair(rlock.DefaultKeyPrefix, name)
}
