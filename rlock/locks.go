package rlock

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/slot"
)

// scanCount is the COUNT of each SCAN that Locks sends: the keys Redis
// looks at per call, so that no call blocks it for long.
const scanCount = 100

// Locks walks every lock under the Client's key prefix, of every kind, and
// yields each one's state once (as its handle's Inspect reads it); match
// is a glob on the lock's name ("" or "*": all). It is an operator's view
// of a deployment, for "which locks are there, who holds them, who waits".
//
// It walks with SCAN (COUNT 100, never KEYS, so Redis is never blocked for
// long) on the one Redis of a standalone or Sentinel deployment, and on
// every master of a Cluster, and reads each lock it finds with one script
// call (Inspect's). A lock is there while its hash is (it is held, a latch
// counts), a fair lock's queue or a semaphore's permits; a free lock that
// left only its fencing counter is not yielded. Grouped locks
// (GroupedMutex) are yielded with their Group. Locks made, or gone, while
// the walk runs may be yielded or not, as SCAN promises; each is yielded
// at most once (the walk remembers the key of each lock it met).
//
// Names are encoded in the keys, so match is applied after decoding each
// key, in the Client: Redis's MATCH only narrows the walk to the prefix.
// The glob is Redis's: '*' any bytes, '?' one byte, [abc], [^a-c] and [a-z]
// classes, '\' quoting the next byte; a malformed one (an unclosed '[', a
// trailing '\') yields ErrInvalidArgument.
//
// Errors are yielded, and end the walk: a nil ctx (ErrNilContext), a nil
// Client (ErrNilClient), Close before or during the walk (ErrClosed), a
// Redis failure or ctx ending. Breaking out of the range loop stops the
// walk at once. Like Inspect, it is a diagnostic, not a synchronisation
// primitive.
func (c *Client) Locks(ctx context.Context, match string) iter.Seq2[LockState, error] {
	return (&walk{c: c, ctx: ctx, match: match}).run
}

// walk is one Locks call: the range loop runs it, as often as it ranges.
type walk struct {
	c     *Client
	ctx   context.Context
	match string
}

// run yields the locks to yield until the walk ends or yield says stop.
func (w *walk) run(yield func(LockState, error) bool) {
	r := newResource(w.c, "", nil, keys.Ref{})
	if err := r.check(w.ctx); err != nil {
		yield(LockState{}, fmt.Errorf("rlock: locks: %w", err))
		return
	}
	g, err := compileGlob(w.match)
	if err != nil {
		yield(LockState{}, fmt.Errorf("rlock: locks: %w", err))
		return
	}
	nodes, err := w.c.masters(w.ctx)
	if err != nil {
		yield(LockState{}, fmt.Errorf("rlock: locks: %w", err))
		return
	}
	s := scan{walk: w, glob: g, pattern: globQuote(w.c.prefix()) + "{*", seen: map[string]bool{}, yield: yield}
	for _, n := range nodes {
		if !s.node(n) {
			return
		}
	}
}

// masters returns a client of every node to scan: each master of a
// Cluster, by address; the Client's own for any other deployment (which
// sends to its master).
func (c *Client) masters(ctx context.Context) ([]rueidis.Client, error) {
	if c.rc.Mode() != rueidis.ClientModeCluster {
		return []rueidis.Client{c.rc}, nil
	}
	nodes, err := c.clusterNodes(ctx)
	if err != nil {
		return nil, err
	}
	var masters []rueidis.Client
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		role, err := n.Do(ctx, n.B().Role().Build()).ToArray()
		if err != nil {
			return nil, fmt.Errorf("role of %s: %w", addr, err)
		}
		if len(role) > 0 {
			if r, _ := role[0].ToString(); r == "master" {
				masters = append(masters, n)
			}
		}
	}
	return masters, nil
}

// clusterNodes returns rueidis's nodes of the Cluster once they include
// every master that serves slots. rueidis learns the slot map anew only
// when a command meets a redirect, so a master added since (a scale-out)
// would be missing, and its locks left out of a walk in silence: for each
// such master, a read of a key in one of its slots has rueidis meet the
// redirect, and the nodes are read again until they include it, for up to
// topologyWait. A master still missing then is an error.
func (c *Client) clusterNodes(ctx context.Context) (map[string]rueidis.Client, error) {
	nodes := c.rc.Nodes()
	if len(nodes) == 0 {
		return nil, errors.New("the client knows no node of the Cluster")
	}
	asked := slices.Min(slices.Collect(maps.Keys(nodes))) // CLUSTER SLOTS names it with no IP when no peer told it its own
	n := nodes[asked]
	slots, err := n.Do(ctx, n.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("cluster slots of %s: %w", asked, err)
	}
	host, _, _ := net.SplitHostPort(asked)
	missing := map[string]uint16{} // a master's address: a slot it serves
	for _, r := range slots {
		if addr, s, ok := slotMaster(r, host); ok && nodes[addr] == nil {
			missing[addr] = s
		}
	}
	deadline := time.Now().Add(topologyWait)
	for len(missing) > 0 {
		for _, s := range missing {
			c.rc.Do(ctx, c.rc.B().Exists().Key(slot.KeyIn(s)).Build()) // only the redirect matters
		}
		timer := time.NewTimer(topologyPoll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		nodes = c.rc.Nodes()
		for addr := range missing {
			if nodes[addr] != nil {
				delete(missing, addr)
			}
		}
		if len(missing) > 0 && time.Now().After(deadline) {
			return nil, fmt.Errorf("masters %v serve slots, and the client cannot reach them yet", slices.Sorted(maps.Keys(missing)))
		}
	}
	return nodes, nil
}

// topologyWait bounds how long clusterNodes waits for rueidis to learn of
// the masters it lacks, checking every topologyPoll: its refresh after a
// redirect waits up to a second.
const (
	topologyWait = 3 * time.Second
	topologyPoll = 50 * time.Millisecond
)

// slotMaster reads one range of CLUSTER SLOTS, as the node at host
// answered it: [start, end, [ip, port, id, ...], replicas...], and returns
// its master's address and the range's first slot. An empty IP is host's
// own (as rueidis reads it); '?' is an endpoint nobody can reach, which
// rueidis leaves out too.
func slotMaster(r rueidis.RedisMessage, host string) (string, uint16, bool) {
	f, err := r.ToArray()
	if err != nil || len(f) < 3 {
		return "", 0, false
	}
	start, err1 := f[0].AsInt64()
	m, err2 := f[2].ToArray()
	if err1 != nil || err2 != nil || len(m) < 2 {
		return "", 0, false
	}
	ip, err1 := m[0].ToString()
	port, err2 := m[1].AsInt64()
	if err1 != nil || err2 != nil || ip == "?" || start < 0 || start > 16383 {
		return "", 0, false
	}
	if ip == "" {
		ip = host
	}
	return net.JoinHostPort(ip, strconv.FormatInt(port, 10)), uint16(start), true
}

// scan is the state of one run of a walk.
type scan struct {
	*walk
	glob    glob
	pattern string          // SCAN's MATCH: every key under the prefix
	seen    map[string]bool // the hash keys of the locks met so far
	yield   func(LockState, error) bool
}

// node walks the keys of one node, yielding the locks they say are there;
// false when the walk ends.
func (s *scan) node(n rueidis.Client) bool {
	cursor := uint64(0)
	for !s.closed() {
		e, err := n.Do(s.ctx, n.B().Scan().Cursor(cursor).Match(s.pattern).Count(scanCount).Build()).AsScanEntry()
		if err != nil {
			s.yield(LockState{}, fmt.Errorf("rlock: locks: scan: %w", err))
			return false
		}
		for _, key := range e.Elements {
			if !s.key(key) {
				return false
			}
		}
		if e.Cursor == 0 {
			return true
		}
		cursor = e.Cursor
	}
	return false
}

// key yields the lock that key says is there, if any, matches the glob and
// was not yielded yet; false when the walk ends.
func (s *scan) key(key string) bool {
	prefix := s.c.prefix()
	var k keys.Keys
	name, kind, ok := keys.Parse(prefix, key)
	if ok {
		k = keysOf(Kind(kind), prefix, name)
	} else {
		var group string
		if group, name, ok = keys.ParseGrouped(prefix, key); !ok {
			return true
		}
		kind, k = keys.KindMutex, keys.NewGrouped(prefix, group, name)
	}
	if !s.glob.match(name) || s.seen[k.Hash] {
		return true
	}
	s.seen[k.Hash] = true
	if s.closed() {
		return false
	}
	st, there, err := s.c.inspectOne(s.ctx, Kind(kind), name, k)
	if err != nil {
		s.yield(LockState{}, fmt.Errorf("%w (lock %q)", err, name))
		return false
	}
	return !there || s.yield(st, nil)
}

// closed yields ErrClosed and reports true once the Client is closed.
func (s *scan) closed() bool {
	select {
	case <-s.c.closed:
		s.yield(LockState{}, fmt.Errorf("rlock: locks: %w", ErrClosed))
		return true
	default:
		return false
	}
}

// glob is a compiled Redis glob: one token per byte it matches, or a star.
type glob []globToken

// globToken matches one byte of the set, or, for a star, any bytes.
type globToken struct {
	star bool
	set  [4]uint64 // bit b: the token matches byte b
}

func (t *globToken) add(lo, hi byte) {
	for b := int(min(lo, hi)); b <= int(max(lo, hi)); b++ {
		t.set[b>>6] |= 1 << (b & 63)
	}
}

func (t *globToken) has(b byte) bool { return t.set[b>>6]&(1<<(b&63)) != 0 }

// compileGlob compiles pattern as Redis's MATCH reads it; "" matches
// everything.
func compileGlob(pattern string) (glob, error) {
	if pattern == "" {
		pattern = "*"
	}
	var g glob
	for i := 0; i < len(pattern); i++ {
		var t globToken
		switch c := pattern[i]; c {
		case '*':
			if len(g) > 0 && g[len(g)-1].star {
				continue
			}
			t.star = true
		case '?':
			t.add(0, 255)
		case '[':
			end, err := t.class(pattern, i+1)
			if err != nil {
				return nil, err
			}
			i = end
		case '\\':
			if i++; i == len(pattern) {
				return nil, fmt.Errorf("%w: glob %q ends in a lone '\\'", ErrInvalidArgument, pattern)
			}
			t.add(pattern[i], pattern[i])
		default:
			t.add(c, c)
		}
		g = append(g, t)
	}
	return g, nil
}

// class reads the class that starts at pattern[i], just after its '[',
// into t, and returns the index of its ']'.
func (t *globToken) class(pattern string, i int) (int, error) {
	negate := i < len(pattern) && pattern[i] == '^'
	if negate {
		i++
	}
	for ; i < len(pattern) && pattern[i] != ']'; i++ {
		lo := pattern[i]
		switch {
		case lo == '\\' && i+1 < len(pattern):
			i++
			lo = pattern[i]
		case i+2 < len(pattern) && pattern[i+1] == '-' && pattern[i+2] != ']':
			t.add(lo, pattern[i+2])
			i += 2
			continue
		}
		t.add(lo, lo)
	}
	if i == len(pattern) {
		return 0, fmt.Errorf("%w: glob %q has an unclosed '['", ErrInvalidArgument, pattern)
	}
	if negate {
		for j := range t.set {
			t.set[j] = ^t.set[j]
		}
	}
	return i, nil
}

// match reports whether s matches g: tokens in order, a star backtracking
// to its latest one (each other token takes one byte, so the latest star
// is the only one to move), in time linear in len(s) per star.
func (g glob) match(s string) bool {
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(g) && g[pi].star:
			star, mark = pi, si
			pi++
		case pi < len(g) && g[pi].has(s[si]):
			pi++
			si++
		case star >= 0:
			mark++
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(g) && g[pi].star {
		pi++
	}
	return pi == len(g)
}

// globQuote quotes every glob character of s for MATCH.
func globQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
