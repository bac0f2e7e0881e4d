package integration

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redistest"
)

// How a process's rlock Clients reach the lock's Redis (procConfig.Mode).
const (
	modeNode     = ""         // one server: each Clients entry is its address
	modeSentinel = "sentinel" // each Clients entry lists the sentinels, comma-separated
	modeCluster  = "cluster"  // each Clients entry lists the masters, comma-separated
	// Each Clients entry lists independent masters, comma-separated: a
	// Client for each, and the workers take a RedLock over them.
	modeRedLock = "redlock"
)

// masters is the address of each rlock Client that one Clients entry of a
// process in mode makes: the entry itself, but for modeRedLock.
func masters(mode, entry string) []string {
	if mode == modeRedLock {
		return strings.Split(entry, ",")
	}
	return []string{entry}
}

// deployment is where a scenario's lock lives and how each process reaches
// it.
type deployment struct {
	mode string
	// near is what a Client dials that the fault leaves alone; far is what
	// the victim's side dials, through the fault when there is a path to
	// cut (the proxy); otherwise the two are the same.
	near, far string
	// netns names the network namespace each child process runs in, by
	// process; a process not named runs in the test's own.
	netns map[string]string
	// locks are the locks the workers contend for, the victim's first;
	// nil means one, named after the test.
	locks []string
	// storeHost, if set, is the test's own address that the processes in
	// other namespaces reach the fenced store at.
	storeHost string
}

// deploySingle is the default deployment: one redis-server child process,
// which the faults pause, kill and restart; with sc.proxy, the victim's
// side reaches it through the harness proxy.
func deploySingle(t *testing.T, sc scenario, r *run) deployment {
	r.lock = redistest.New(t, redistest.Config{Backend: redistest.Process})
	d := deployment{near: r.lock.Addr(), far: r.lock.Addr()}
	if sc.proxy {
		r.proxy = r.lock.Proxy(t)
		d.far = r.proxy.Addr()
	}
	return d
}

// lockClientOption is how a Client of a process in mode connects to the
// lock's Redis at addrs (one Clients entry).
func lockClientOption(mode, addrs string) rueidis.ClientOption {
	seeds := strings.Split(addrs, ",")
	switch mode {
	case modeSentinel:
		return redistest.SentinelClientOption(seeds)
	case modeCluster:
		return redistest.ClusterClientOption(seeds)
	}
	return redistest.ClientOption(addrs)
}
