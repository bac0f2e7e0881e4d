package integration

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// setup is one Redis deployment the suites run against: a single node, or a
// Redis Cluster.
type setup struct {
	node    *redistest.Node    // nil on a Cluster
	cluster *redistest.Cluster // nil on a single node
}

// client returns a new rlock Client on its own rueidis connection, closed
// when t ends.
func (s setup) client(t *testing.T, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	return newRlock(t, s.raw(t), opts...)
}

// newRlock returns an rlock Client on rc, closed when t ends.
func newRlock(t *testing.T, rc rueidis.Client, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(rc, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// raw returns a plain rueidis client for inspecting Redis directly; on a
// Cluster it routes each command to the node of its key's slot.
func (s setup) raw(t *testing.T) rueidis.Client {
	if s.cluster != nil {
		return s.cluster.Client(t)
	}
	return s.node.Client(t)
}

// forEachSetup runs suite once for every Redis backend the harness offers,
// each on its own node, and once on a three-master Cluster (unless
// REDIS_ADDR names the one server to use).
func forEachSetup(t *testing.T, suite func(t *testing.T, s setup)) {
	backends := redistest.Backends(t)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			suite(t, setup{node: redistest.New(t, redistest.Config{Backend: backend})})
		})
	}
	if backends[0] == redistest.External {
		t.Log("REDIS_ADDR is set: the Cluster setup is left out")
		return
	}
	t.Run("cluster", func(t *testing.T) {
		suite(t, setup{cluster: redistest.NewCluster(t, redistest.ClusterConfig{})})
	})
}

// lockName derives a lock name unique to the running test.
func lockName(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", ":")
}
