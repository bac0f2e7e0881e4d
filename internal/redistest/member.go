package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redisserver"
)

// settleTimeout bounds how long a Cluster or a Sentinel may take to form,
// or to settle after a change, on a machine busy with other tests (a
// killed master restarted and made a replica again took more than a
// minute once, beside two other test runs on 2 cores).
const settleTimeout = 2 * time.Minute

// replicationArgs are the redis-server arguments of the data nodes of a
// Cluster or a Sentinel. A replica syncs at once, not after the 5 s a
// master waits by default for more replicas to share the transfer; and a
// master pings its replicas every second, not every 10 s, which moves their
// replication offset past 0, without which CLUSTER SLOTS leaves them out.
var replicationArgs = []string{"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1"}

// member is one server of a Cluster or a Sentinel, with the plain
// connection the harness commands it through.
type member struct {
	*Node
	admin rueidis.Client
	proc  *redisserver.Process
}

// startMember starts a redis-server child process, with config file conf
// unless it is empty, and connects to it. Setups of several servers always
// run child processes: their servers must reach each other at the addresses
// clients dial, which published container ports are not.
func startMember(ctx context.Context, conf string, extra []string) (member, error) {
	s, err := redisserver.StartProcess(ctx, redisserver.Launcher{}, conf, extra)
	if err != nil {
		return member{}, err
	}
	n := &Node{backend: Process, srv: s}
	rc, err := adminClient(n.Addr())
	if err != nil {
		return member{}, errors.Join(fmt.Errorf("redistest: connect to %s: %w", n.Addr(), err), n.Close())
	}
	return member{Node: n, admin: rc, proc: s}, nil
}

// close drops the connection and stops the server.
func (m member) close() error {
	m.admin.Close()
	return m.Node.Close()
}

// logs returns the end of each member's log, headed by its address: what
// an error says when a setup does not settle.
func logs(members ...member) string {
	var b strings.Builder
	for _, m := range members {
		fmt.Fprintf(&b, "\n--- %s log:\n%s", m.Addr(), m.proc.LogTail())
	}
	return b.String()
}

// adminClient connects to exactly the server at addr, whatever its mode: no
// cluster or sentinel discovery, no client-side cache (nothing is read
// twice), and no retries, so that every error reaches the harness at once.
func adminClient(addr string) (rueidis.Client, error) {
	opt := ClientOption(addr)
	opt.ForceSingleClient = true
	opt.DisableCache = true
	opt.DisableRetry = true
	return rueidis.NewClient(opt)
}

// linkUp reports why the replica behind rc is not yet in sync with its
// master, or nil once INFO says master_link_status:up.
func linkUp(ctx context.Context, rc rueidis.Client) error {
	info, err := rc.Do(ctx, rc.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return errors.New("replica link to its master is not up")
	}
	return nil
}

// hostPort splits a node's address into the host and numeric port that
// CLUSTER MEET, MIGRATE and REPLICAOF take.
func hostPort(addr string) (string, int64, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseInt(port, 10, 64)
	return host, p, err
}
