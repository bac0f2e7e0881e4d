package redistest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a package's tests: it prepares the environment for
// testcontainers-go, runs m, stops the package's shared node and example
// servers, and fails the run if any goroutine outlives the tests. Use it as
// the whole TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M) {
	prepareDocker()
	code := m.Run()
	stopShared()
	stopExamples()
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions leave out goroutines the standard library keeps on purpose.
var leakOptions = []goleak.Option{
	// The Docker client's idle keep-alive connections belong to net/http's
	// pool, not to a test; they close when the pool drops them.
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	// A rueidis cluster client closes the connections a topology refresh
	// drops 5 s later, on a goroutine of their own that outlives Close
	// (rueidis #211, on purpose: commands in flight may still use them). It
	// exits by itself; the name is that of rueidis v1.0.79.
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	// A cluster client that met a redirect refreshes its slot map lazily:
	// a goroutine sleeps up to a second first, and Close does not wake it;
	// it exits by itself after its sleep (rueidis v1.0.79's name).
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
}
