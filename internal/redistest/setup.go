package redistest

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// subtest separators written as colons, and a suffix of this run of it.
// Calls in one test get the same name. The suffix is what lets a test run
// again (-count, or against a REDIS_ADDR that outlives the process) on a
// Redis that still holds its last run's keys: a fencing counter, a latch
// left counting, a queue entry's lease.
func LockName(t testing.TB) string {
	if n, ok := lockNames.Load(t); ok {
		return n.(string)
	}
	n := strings.ReplaceAll(t.Name(), "/", ":") + "~" + lockNameRun + strconv.FormatUint(lockNameSeq.Add(1), 36)
	if _, loaded := lockNames.LoadOrStore(t, n); !loaded {
		t.Cleanup(func() { lockNames.Delete(t) })
	}
	return LockName(t)
}

// What LockName needs: the names given out, by test; a mark of this
// process; a counter.
var (
	lockNames   sync.Map
	lockNameRun = strconv.FormatUint(uint64(rand.Uint32()), 36) + "."
	lockNameSeq atomic.Uint64
)
