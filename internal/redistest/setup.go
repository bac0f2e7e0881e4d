package redistest

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// Setup is one Redis deployment a suite runs against: a single Node, or a
// Redis Cluster. Exactly one of the two is set.
type Setup struct {
	Node    *Node    // nil on a Cluster
	Cluster *Cluster // nil on a single node
}

// Client returns a rueidis client of the deployment, closed when t ends. On
// a Cluster it routes each command to the node of its key's slot.
func (s Setup) Client(t testing.TB) rueidis.Client {
	t.Helper()
	if s.Cluster != nil {
		return s.Cluster.Client(t)
	}
	return s.Node.Client(t)
}

// ForEachSetup runs suite once for every backend this machine offers, each
// on a Node of its own, and once on a Cluster of DefaultClusterMasters
// masters, unless REDIS_ADDR names the one server to use.
func ForEachSetup(t *testing.T, suite func(t *testing.T, s Setup)) {
	t.Helper()
	backends := Backends(t)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			suite(t, Setup{Node: New(t, Config{Backend: backend})})
		})
	}
	if backends[0] == External {
		t.Log("REDIS_ADDR is set: the Cluster setup is left out")
		return
	}
	t.Run("cluster", func(t *testing.T) {
		suite(t, Setup{Cluster: NewCluster(t, ClusterConfig{})})
	})
}

// LockName is a lock name unique to the running test: its name, with the
// subtest separators written as colons.
func LockName(t testing.TB) string {
	return strings.ReplaceAll(t.Name(), "/", ":")
}
