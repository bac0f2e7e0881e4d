// Package redistest starts and controls real Redis servers for rlock's
// tests, benchmarks and Examples. It never imitates Redis. A program (the
// demo) must not import it, since it links testing, testify and
// testcontainers-go: internal/redisserver finds or starts a Redis for one.
//
// A Node comes from one of three backends, in this order of preference:
//
//  1. external: REDIS_ADDR names a server the caller runs. The harness can
//     neither stop nor restart it, so tests that inject faults skip there
//     and say why.
//  2. docker: a container started through testcontainers-go from the image
//     RLOCK_REDIS_IMAGE (default rlock-redis:local, built FROM scratch out of
//     the host's redis-server by .ci/redis-image.sh).
//  3. process: redis-server from PATH, run as a child process on a free
//     loopback port, started by internal/redisserver as a program's is.
//
// Every node listens on, and is dialled at, 127.0.0.1. Main points
// testcontainers-go at 127.0.0.1 (TESTCONTAINERS_HOST_OVERRIDE) so that no
// test dials a gateway address, and turns Ryuk off when its image is absent.
//
// A controllable node can be paused and resumed (SIGSTOP, docker pause),
// killed and restarted empty on the same address, and put behind a Proxy
// that slows or cuts the link.
//
// For faults a loopback proxy cannot make, Netns builds a private network
// of Linux network namespaces (root, iproute2, iptables): Redis and client
// processes each in a namespace of their own, and the links between them
// cut one way or both, made lossy or slow. A FakeClock puts a process
// node's wall clock under the test's control, so that it can jump.
// Sentinel.KillMaster and Cluster.KillMaster crash a master and return once
// its replica serves and the killed node is back as a replica.
//
// ForEachSetup runs a suite on every backend and on a Cluster, each given as
// a Setup. LastingKeys, Subscribers, Queued and ReadStats read a lock's
// state and the server's counters from Redis itself, naming keys and
// channels through internal/keys.
//
// A test never sleeps to let a state come about (a waiter subscribed, a
// waiter queued, a key gone): it waits for the state with Eventually, which
// polls on the test's goroutine and fails with what it saw last, or with
// the waits built on it (WaitSubscribers, AssertNoSubscribers, WaitQueued).
//
// Tests get nodes from New and Shared. Example functions, which have no
// testing.T, get the addresses of servers started for them from
// ExampleAddrs; Main stops both.
package redistest
