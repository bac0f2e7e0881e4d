package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redisserver"
)

// masterName is the name the sentinels know their master by.
const masterName = "mymaster"

// sentinelConf is each sentinel's config file, for the master's port: a
// quorum of two of the three sentinels; a master silent for downAfter is
// down; a failover that stalls for 5 s is abandoned; replicas resync one at
// a time. Port, address and directory come from the command line, as for
// every node.
const sentinelConf = `sentinel monitor ` + masterName + ` 127.0.0.1 %d 2
sentinel down-after-milliseconds ` + masterName + ` %d
sentinel failover-timeout ` + masterName + ` 5000
sentinel parallel-syncs ` + masterName + ` 1
`

// downAfter is how long a node may leave a sentinel's PING unanswered
// before that sentinel counts it down. A sentinel that has just switched
// to a new master counts from when it made the new master's record, not
// from its first PING, so on a loaded machine 1 s (what it was) let two
// sentinels count a master promoted a second before as down and fail it
// over again, to the killed node just restarted, empty (1 run in 10, both
// before and after the inboxes); twice the ping period leaves room.
const downAfter = 2 * time.Second

// sentinelRefresh is how often the harness's sentinel clients ask the
// sentinels for the master, besides following +switch-master.
const sentinelRefresh = time.Second

// SentinelConfig says how to start a Sentinel.
type SentinelConfig struct {
	// Args are extra redis-server arguments for the master and its replica.
	Args []string
}

// Sentinel is a master, its replica and three sentinels that watch them,
// all redis-server child processes on loopback. Clients find the master by
// asking the sentinels, so a failover moves them to the other node.
type Sentinel struct {
	data      []member // the master at start, then its replica
	sentinels []member
}

// StartSentinel starts a master and its replica, waits until the replica is
// in sync, then starts three sentinels and returns once each knows the
// replica and the other two. The caller must Close it.
func StartSentinel(ctx context.Context, cfg SentinelConfig) (*Sentinel, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	s := &Sentinel{}
	if err := s.start(ctx, cfg); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

func (s *Sentinel) start(ctx context.Context, cfg SentinelConfig) error {
	args := slices.Concat(replicationArgs, cfg.Args)
	for range 2 {
		m, err := startMember(ctx, "", args)
		if err != nil {
			return err
		}
		s.data = append(s.data, m)
	}
	host, port, err := hostPort(s.data[0].Addr())
	if err != nil {
		return err
	}
	replica := s.data[1].admin
	if err := replica.Do(ctx, replica.B().Replicaof().Host(host).Port(port).Build()).Error(); err != nil {
		return fmt.Errorf("redistest: REPLICAOF on %s: %w", s.data[1].Addr(), err)
	}
	// Sentinels learn of replicas from the master's INFO, which they ask
	// for every 10 s: started after the sync, they see the replica at once.
	if err := redisserver.Poll(ctx, func(ctx context.Context) error { return linkUp(ctx, replica) }); err != nil {
		return fmt.Errorf("redistest: replica %s: %w", s.data[1].Addr(), err)
	}
	conf := fmt.Sprintf(sentinelConf, port, downAfter.Milliseconds())
	for range 3 {
		m, err := startMember(ctx, conf, []string{"--sentinel"})
		if err != nil {
			return err
		}
		s.sentinels = append(s.sentinels, m)
	}
	if err := redisserver.Poll(ctx, s.watching); err != nil {
		return fmt.Errorf("redistest: sentinels did not settle: %w", err)
	}
	return nil
}

// NewSentinel starts a Sentinel setup for t as cfg says, logs its
// addresses, and stops it when t ends. It fails t if the setup cannot be
// started.
func NewSentinel(t testing.TB, cfg SentinelConfig) *Sentinel {
	t.Helper()
	s, err := StartSentinel(t.Context(), cfg)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Logf("redistest: master %s, replica %s, sentinels %v (process backend)", s.data[0].Addr(), s.data[1].Addr(), s.SentinelAddrs())
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("redistest: stop sentinel setup: %v", err)
		}
	})
	return s
}

// MasterName is the name the sentinels monitor the master by.
func (s *Sentinel) MasterName() string { return masterName }

// SentinelAddrs returns the sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.sentinels))
	for i, m := range s.sentinels {
		out[i] = m.Addr()
	}
	return out
}

// Nodes returns the two data nodes: the master at start, then its replica.
// Failover swaps their roles, not their order. A killed and restarted node
// comes back empty and a master; the sentinels make it a replica again if
// the other node is master by then.
func (s *Sentinel) Nodes() []*Node { return []*Node{s.data[0].Node, s.data[1].Node} }

// Master returns the data node that the sentinels name master now, as the
// first sentinel to answer sees it.
func (s *Sentinel) Master(ctx context.Context) (*Node, error) {
	var errs []error
	for _, m := range s.sentinels {
		addr, err := masterAddr(ctx, m.admin)
		if err != nil {
			errs = append(errs, fmt.Errorf("redistest: sentinel %s: %w", m.Addr(), err))
			continue
		}
		for _, d := range s.data {
			if d.Addr() == addr {
				return d.Node, nil
			}
		}
		return nil, fmt.Errorf("redistest: sentinel %s names %s master, which is no node of this setup", m.Addr(), addr)
	}
	return nil, errors.Join(errs...)
}

// NewClient returns a rueidis sentinel client that asks the sentinels for
// the master, and asks again each sentinelRefresh in case it missed a
// +switch-master; the caller closes it.
func (s *Sentinel) NewClient() (rueidis.Client, error) {
	return newModeClient(SentinelClientOption(s.SentinelAddrs()), rueidis.ClientModeSentinel, "sentinel")
}

// SentinelClientOption is how the harness's sentinel clients connect,
// through the sentinels at addrs: what NewClient uses, for clients made in
// other processes.
func SentinelClientOption(addrs []string) rueidis.ClientOption {
	opt := ClientOption(addrs[0])
	opt.InitAddress = addrs
	opt.Sentinel = rueidis.SentinelOption{MasterSet: masterName, TopologyRefreshInterval: sentinelRefresh}
	return opt
}

// Client returns a rueidis sentinel client, closed when t ends.
func (s *Sentinel) Client(t testing.TB) rueidis.Client {
	t.Helper()
	return testClient(t, s.NewClient)
}

// Failover has a sentinel promote the replica (SENTINEL FAILOVER) and
// returns once every sentinel names it master and it answers ROLE as one.
// The old master is not told at once: a sentinel turns it into a replica
// of the new one only after it has gone on claiming to be master for 8 s
// (Redis's four hello periods), and until then it accepts the writes of
// clients that still talk to it.
func (s *Sentinel) Failover(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	old, next, err := s.roles(ctx)
	if err != nil {
		return err
	}
	rc := s.sentinels[0].admin
	// A sentinel whose news of the replica is stale refuses with
	// NOGOODSLAVE until its next INFO; any other answer is final.
	var answer error
	err = redisserver.Poll(ctx, func(ctx context.Context) error {
		err := rc.Do(ctx, rc.B().SentinelFailover().Master(masterName).Build()).Error()
		if err != nil && strings.HasPrefix(err.Error(), "NOGOODSLAVE") {
			return err
		}
		answer = err
		return nil
	})
	if err = errors.Join(err, answer); err != nil {
		return fmt.Errorf("redistest: SENTINEL FAILOVER: %w", err)
	}
	return s.awaitPromoted(ctx, old, next)
}

// KillMaster kills the master, as a crash would, and returns once every
// sentinel names the replica master and it answers ROLE as one; then, once
// every sentinel has heard the new master answer a PING, it restarts
// the killed node, empty, and waits until the sentinels have made it a
// replica of the new master, in sync. Holds that the replica had not
// received are lost. Restarted sooner, the empty node would be there to be
// promoted by a sentinel that counts the new master down before it hears it.
func (s *Sentinel) KillMaster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	old, next, err := s.roles(ctx)
	if err != nil {
		return err
	}
	if err := old.Kill(ctx); err != nil {
		return fmt.Errorf("redistest: kill master %s: %w", old.Addr(), err)
	}
	if err := s.awaitPromoted(ctx, old, next); err != nil {
		return err
	}
	if err := redisserver.Poll(ctx, s.heard); err != nil {
		return fmt.Errorf("redistest: sentinels and the new master %s: %w", next.Addr(), err)
	}
	if err := old.Restart(ctx); err != nil {
		return fmt.Errorf("redistest: restart %s: %w", old.Addr(), err)
	}
	restarted := s.data[0]
	if restarted.Node != old {
		restarted = s.data[1]
	}
	if err := redisserver.Poll(ctx, func(ctx context.Context) error { return linkUp(ctx, restarted.admin) }); err != nil {
		return fmt.Errorf("redistest: %s did not become a replica again: %w%s", old.Addr(), err, logs(slices.Concat(s.data, s.sentinels)...))
	}
	return nil
}

// roles returns the master now and the data node a failover promotes.
func (s *Sentinel) roles(ctx context.Context) (*Node, member, error) {
	old, err := s.Master(ctx)
	if err != nil {
		return nil, member{}, err
	}
	if s.data[0].Node == old {
		return old, s.data[1], nil
	}
	return old, s.data[0], nil
}

// awaitPromoted waits until every sentinel names next master, in place of
// old, and next answers ROLE as one.
func (s *Sentinel) awaitPromoted(ctx context.Context, old *Node, next member) error {
	err := redisserver.Poll(ctx, func(ctx context.Context) error {
		for _, m := range s.sentinels {
			addr, err := masterAddr(ctx, m.admin)
			if err != nil {
				return err
			}
			if addr != next.Addr() {
				return fmt.Errorf("sentinel %s names %s master", m.Addr(), addr)
			}
		}
		role, err := next.admin.Do(ctx, next.admin.B().Role().Build()).ToArray()
		if err != nil || len(role) == 0 {
			return fmt.Errorf("ROLE of %s: %v", next.Addr(), err)
		}
		if r, _ := role[0].ToString(); r != "master" {
			return fmt.Errorf("%s is still a %s", next.Addr(), r)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redistest: failover from %s to %s: %w", old.Addr(), next.Addr(), err)
	}
	return nil
}

// Close stops the sentinels, then the data nodes.
func (s *Sentinel) Close() error {
	var errs []error
	for _, m := range slices.Concat(s.sentinels, s.data) {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

// watching reports why the sentinels are not yet ready to fail over, or
// nil once each knows the replica as up and the other two sentinels.
func (s *Sentinel) watching(ctx context.Context) error {
	for _, m := range s.sentinels {
		rc := m.admin
		replicas, err := rc.Do(ctx, rc.B().SentinelReplicas().Master(masterName).Build()).ToArray()
		if err != nil {
			return err
		}
		if len(replicas) != 1 {
			return fmt.Errorf("sentinel %s knows %d replicas", m.Addr(), len(replicas))
		}
		fields, err := replicas[0].AsStrMap()
		if err != nil {
			return err
		}
		if fields["flags"] != "slave" || fields["master-link-status"] != "ok" {
			return fmt.Errorf("sentinel %s sees the replica as %s with link %s", m.Addr(), fields["flags"], fields["master-link-status"])
		}
		others, err := rc.Do(ctx, rc.B().SentinelSentinels().Master(masterName).Build()).ToArray()
		if err != nil {
			return err
		}
		if len(others) != len(s.sentinels)-1 {
			return fmt.Errorf("sentinel %s knows %d other sentinels", m.Addr(), len(others))
		}
	}
	return nil
}

// heard reports why a sentinel may not yet have heard the master it names,
// or nil once each flags it master and nothing else (not down, not failing
// over) and has no PING to it unanswered (last-ping-sent 0). A sentinel's
// new record of a node counts a PING as sent from the moment it is made,
// so a record that shows none has had an answer.
func (s *Sentinel) heard(ctx context.Context) error {
	for _, m := range s.sentinels {
		rc := m.admin
		fields, err := rc.Do(ctx, rc.B().Arbitrary("SENTINEL", "MASTER").Args(masterName).Build()).AsStrMap()
		if err != nil {
			return err
		}
		if fields["flags"] != "master" || fields["last-ping-sent"] != "0" {
			return fmt.Errorf("sentinel %s sees the master as %s, a PING unanswered for %s ms", m.Addr(), fields["flags"], fields["last-ping-sent"])
		}
	}
	return nil
}

// masterAddr asks the sentinel behind rc for the master's address.
func masterAddr(ctx context.Context, rc rueidis.Client) (string, error) {
	hp, err := rc.Do(ctx, rc.B().SentinelGetMasterAddrByName().Master(masterName).Build()).AsStrSlice()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("master address %q", hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}
