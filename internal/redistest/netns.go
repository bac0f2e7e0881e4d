package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/rlock/rlock/internal/redisserver"
)

// Netns is a private network of Linux network namespaces on this machine,
// for faults a loopback proxy cannot make: real partitions, delays and
// losses in the kernel's network stack. A hub namespace holds a
// bridge; each host is a namespace with one veth to it and an address in a
// /24 of 10.128.0.0/9 that no interface here uses yet. The test's own
// namespace joins as host "" (address .1), so the test reaches every host
// and every host reaches what the test serves on HostIP. It needs root,
// iproute2 (ip, tc) and iptables, and is removed when the test ends.
type Netns struct {
	prefix string            // of every namespace and interface name
	subnet string            // "10.a.b."
	hosts  map[string]string // host → address
	links  map[string]string // host → its veth, in its own namespace
	spaces map[string]string // host → namespace ("" for the test's own)
}

// NewNetns builds the hub and joins the test's namespace to it. It fails
// t when the machine cannot (no root, no iproute2).
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("redistest: network namespaces need root")
	}
	for _, tool := range []string{"ip", "tc", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("redistest: network namespaces need %s: apt-get install iproute2 iptables", tool)
		}
	}
	n := &Netns{prefix: fmt.Sprintf("rl%04x", rand.N(1<<16)), hosts: map[string]string{},
		links: map[string]string{}, spaces: map[string]string{}}
	subnet, err := freeSubnet()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	n.subnet = subnet
	t.Cleanup(func() {
		if err := n.remove(); err != nil {
			t.Errorf("redistest: remove network %s: %v", n.prefix, err)
		}
	})
	hub := n.prefix + "hub"
	err = ipRun(
		[]string{"netns", "add", hub},
		[]string{"-n", hub, "link", "add", "br0", "type", "bridge"},
		[]string{"-n", hub, "link", "set", "br0", "up"},
	)
	if err == nil {
		_, err = n.join("", "")
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Logf("redistest: network %s0/24 of namespaces %s*", n.subnet, n.prefix)
	return n
}

// AddHost makes a namespace named after host, joins it to the network and
// returns its address.
func (n *Netns) AddHost(t testing.TB, host string) string {
	t.Helper()
	ns := n.prefix + host
	err := ipRun([]string{"netns", "add", ns}, []string{"-n", ns, "link", "set", "lo", "up"})
	var addr string
	if err == nil {
		addr, err = n.join(host, ns)
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return addr
}

// join links namespace ns (the test's own when "") to the hub as host.
func (n *Netns) join(host, ns string) (string, error) {
	i := len(n.hosts)
	inner, outer := fmt.Sprintf("%sv%d", n.prefix, i), fmt.Sprintf("%sb%d", n.prefix, i)
	addr := fmt.Sprintf("%s%d", n.subnet, i+1)
	hub := n.prefix + "hub"
	steps := [][]string{
		{"link", "add", inner, "type", "veth", "peer", "name", outer},
		{"link", "set", outer, "netns", hub},
		{"-n", hub, "link", "set", outer, "master", "br0", "up"},
	}
	at := []string{}
	if ns != "" {
		steps = append(steps, []string{"link", "set", inner, "netns", ns})
		at = []string{"-n", ns}
	}
	steps = append(steps,
		append(at[:len(at):len(at)], "addr", "add", addr+"/24", "dev", inner),
		append(at[:len(at):len(at)], "link", "set", inner, "up"))
	if err := ipRun(steps...); err != nil {
		return "", err
	}
	n.hosts[host], n.links[host], n.spaces[host] = addr, inner, ns
	return addr, nil
}

// HostIP is the test's own address on the network.
func (n *Netns) HostIP() string { return n.hosts[""] }

// Namespace is the name of host's namespace, for ip netns exec.
func (n *Netns) Namespace(host string) string { return n.spaces[host] }

// StartNode starts a redis-server child process in host's namespace,
// listening on host's address; it is stopped when t ends. It can be
// paused, killed and restarted like any process node.
func (n *Netns) StartNode(t testing.TB, host string) *Node {
	t.Helper()
	l := redisserver.Launcher{Host: n.hosts[host], Prefix: []string{"ip", "netns", "exec", n.spaces[host]}}
	s, err := redisserver.StartProcess(t.Context(), l, "", nil)
	if err != nil {
		t.Fatalf("redistest: redis in namespace %s: %v", n.spaces[host], err)
	}
	node := &Node{backend: Process, srv: s}
	t.Logf("redistest: redis at %s in namespace %s (process backend)", node.Addr(), n.spaces[host])
	t.Cleanup(func() {
		if err := node.Close(); err != nil {
			t.Errorf("redistest: stop %s: %v", node.Addr(), err)
		}
	})
	return node
}

// Impairment is what Impair does to one way between two hosts. This
// machine's kernel has no netem, so a loss is an iptables DROP (with the
// statistic match when partial) and a delay is a narrow tc htb class, whose
// queue delays what crosses it.
type Impairment struct {
	Loss float64 // share of packets dropped: 1 cuts the way
	Rate string  // if set, the way's bandwidth, such as "16kbit"
}

// Impair impairs what host from sends to host to, one way; impair both
// ways for a full partition. from must be a host of its own namespace, not
// the test's. Clear lifts it.
func (n *Netns) Impair(ctx context.Context, from, to string, imp Impairment) error {
	ns, dev, dst := n.spaces[from], n.links[from], n.hosts[to]
	if ns == "" {
		return errors.New("redistest: the test's own namespace is never impaired")
	}
	var steps [][]string
	switch {
	case imp.Loss >= 1:
		steps = append(steps, []string{"ip", "netns", "exec", ns, "iptables", "-I", "OUTPUT", "-d", dst, "-j", "DROP"})
	case imp.Loss > 0:
		steps = append(steps, []string{"ip", "netns", "exec", ns, "iptables", "-I", "OUTPUT", "-d", dst,
			"-m", "statistic", "--mode", "random", "--probability", fmt.Sprint(imp.Loss), "-j", "DROP"})
	}
	if imp.Rate != "" {
		steps = append(steps,
			[]string{"tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"},
			[]string{"tc", "-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit"},
			[]string{"tc", "-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:2", "htb", "rate", imp.Rate, "ceil", imp.Rate},
			[]string{"tc", "-n", ns, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
				"u32", "match", "ip", "dst", dst + "/32", "flowid", "1:2"})
	}
	return runAll(ctx, steps...)
}

// Clear lifts every impairment of what host from sends.
func (n *Netns) Clear(ctx context.Context, from string) error {
	ns := n.spaces[from]
	if ns == "" {
		return nil
	}
	return runAll(ctx,
		[]string{"ip", "netns", "exec", ns, "iptables", "-F", "OUTPUT"},
		// Back to the default qdisc; replacing works whether or not an
		// htb was there.
		[]string{"tc", "-n", ns, "qdisc", "replace", "dev", n.links[from], "root", "pfifo"},
	)
}

// runAll runs each command in turn, stopping at the first failure.
func runAll(ctx context.Context, cmds ...[]string) error {
	for _, c := range cmds {
		if out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("redistest: %s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

// remove deletes the test's own veth (its peer goes with it) and every
// namespace, which takes their interfaces along.
func (n *Netns) remove() error {
	var errs []error
	if link, ok := n.links[""]; ok {
		errs = append(errs, ipRun([]string{"link", "del", link}))
	}
	for host, ns := range n.spaces {
		if host != "" {
			errs = append(errs, ipRun([]string{"netns", "del", ns}))
		}
	}
	return errors.Join(append(errs, ipRun([]string{"netns", "del", n.prefix + "hub"}))...)
}

// ipRun runs ip with each argument list in turn, stopping at the first
// failure.
func ipRun(steps ...[]string) error {
	cmds := make([][]string, len(steps))
	for i, args := range steps {
		cmds[i] = append([]string{"ip"}, args...)
	}
	return runAll(context.Background(), cmds...)
}

// freeSubnet picks a /24 of 10.128.0.0/9 that overlaps no network of the
// test's namespace.
func freeSubnet() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for range 100 {
		mine := &net.IPNet{IP: net.IPv4(10, byte(128+rand.N(128)), byte(rand.N(256)), 0), Mask: net.CIDRMask(24, 32)}
		if !slices.ContainsFunc(addrs, func(a net.Addr) bool {
			theirs, ok := a.(*net.IPNet)
			return ok && (theirs.Contains(mine.IP) || mine.Contains(theirs.IP))
		}) {
			return strings.TrimSuffix(mine.IP.String(), "0"), nil
		}
	}
	return "", errors.New("no free /24 in 10.128.0.0/9")
}
