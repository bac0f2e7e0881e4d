package main

import (
	"fmt"
	"slices"
)

// libraries are the table's columns, rlock first.
var libraries = []string{"rlock", "rueidislock", "redsync", "redislock"}

// polling are the peers that wait by polling.
var polling = []string{"redsync", "redislock"}

// row is one line of the table: one measure of one scenario.
type row struct {
	title  string
	bench  string  // benchmark name below prefix, without the library
	unit   string  // the measure's unit in the benchmark output
	scale  float64 // multiplies values for display; 0 means 1
	higher bool    // higher is better
	floor  func(r results) (float64, bool)
	target func(c cells) (text string, met bool) // nil: none
	// versusBest is the factor of the best peer's figure that the target
	// asks of rlock (1: no worse than it), when it asks one: a floor that
	// misses it shows the target out of reach.
	versusBest float64
}

// cells are the figures of one row, in display units.
type cells struct {
	lib        map[string]float64 // by library; absent when not measured
	floor      float64
	hasFloor   bool
	best       float64 // the best peer's figure
	hasBest    bool
	floorRatio float64 // rlock / floor, when rlock and the floor were measured
	bestRatio  float64 // rlock / best peer, when rlock and a peer were measured
	hasRatios  bool    // rlock was measured
	res        results // every figure, for targets that read another row's
}

// rlockIn is rlock's figure of bench in unit, unscaled, for a target that
// reads a figure of its scenario other than its row's.
func (c cells) rlockIn(bench, unit string) (float64, bool) {
	return c.res.get(bench+"/rlock", unit)
}

// floorAtMost reports whether rlock is at most limit times the floor.
func (c cells) floorAtMost(limit float64) bool {
	return c.hasRatios && c.hasFloor && c.floor > 0 && c.floorRatio <= limit
}

// bestAtMost reports whether rlock is at most limit times the best peer.
func (c cells) bestAtMost(limit float64) bool {
	return c.hasRatios && c.hasBest && c.best > 0 && c.bestRatio <= limit
}

// floorOf is a floor of n times the median of bench's values in unit,
// scaled by scale.
func floorOf(bench, unit string, n, scale float64) func(r results) (float64, bool) {
	return func(r results) (float64, bool) {
		v, ok := r.get(bench, unit)
		return n * v * scale, ok
	}
}

// roundTrips is a floor of n raw EVALSHA round trips, in µs.
func roundTrips(n float64) func(r results) (float64, bool) {
	return floorOf("Floor/roundtrip", "ns/op", n, 1e-3)
}

// oneRoundTripEach is a floor of acquisitions a second when each takes
// one raw EVALSHA round trip. No lock whose acquisitions Redis grants one
// at a time passes a hot lock faster: the grant's reply and the holder's
// release cross the wire while it is held.
func oneRoundTripEach(r results) (float64, bool) {
	v, ok := r.get("Floor/roundtrip", "ns/op")
	return 1e9 / v, ok && v > 0
}

// idleRoundTrip is a floor of one raw EVALSHA round trip after idle of
// idleness, at percentile p ("p50", "p99"), in µs.
func idleRoundTrip(idle, p string) func(r results) (float64, bool) {
	return floorOf("Floor/roundtrip-idle="+idle, p+"-µs", 1, 1)
}

// watchdogRows are the rows of the watchdog scenario at n locks; a round
// should take about n/100 calls (100 keys a call), plus a few for the
// ticks that renew only some.
func watchdogRows(n int, label string) []row {
	bench := fmt.Sprintf("Watchdog/locks=%d", n)
	limit := float64(n)/100*1.05 + 8
	return []row{
		{
			title: "Watchdog, " + label + " locks: script calls per round", bench: bench, unit: "scripts/round",
			target: func(c cells) (string, bool) {
				return fmt.Sprintf("≈ locks/100 (≤ %s)", figure(limit, true)), c.rlockBelow(limit)
			},
		},
		{title: "Watchdog, " + label + " locks: client CPU per round (ms)", bench: bench, unit: "cpu-µs/round", scale: 1e-3},
		{title: "Watchdog, " + label + " locks: Redis CPU per round (ms)", bench: bench, unit: "redis-cpu-µs/round", scale: 1e-3},
		{
			title: "Watchdog, " + label + " locks: locks lost", bench: bench, unit: "lost-locks",
			target: func(c cells) (string, bool) { return "0", c.rlockBelow(0) },
		},
	}
}

// rows are the table's lines, scenario by scenario.
var rows = slices.Concat([]row{
	{
		title: "Lock+Unlock, 1 goroutine (µs)", bench: "LockUnlock", unit: "ns/op", scale: 1e-3,
		floor: roundTrips(2),
		target: func(c cells) (string, bool) {
			return "≤ 1.25× floor, no peer faster", c.floorAtMost(1.25) && c.bestAtMost(1)
		},
	},
	{
		title: "Lock+Unlock, 1 goroutine: p50 (µs)", bench: "LockUnlock", unit: "p50-µs",
		floor: roundTrips(2), versusBest: 1,
		target: func(c cells) (string, bool) {
			return "≤ 2× floor, no peer faster (issue 25)", c.floorAtMost(2) && c.bestAtMost(1)
		},
	},
	{
		title: "Lock+Unlock: client CPU per cycle (µs)", bench: "LockUnlock", unit: "cpu-µs/op",
		floor:  floorOf("Floor/roundtrip", "cpu-µs/op", 2, 1),
		target: atMostBestPeer, versusBest: 1,
	},
	{
		title: "Lock+Unlock: Redis CPU per cycle (µs)", bench: "LockUnlock", unit: "redis-cpu-µs/op",
		floor:  floorOf("Floor/minimal-scripts", "redis-cpu-µs/op", 1, 1),
		target: atMostBestPeer, versusBest: 1,
	},
	{
		title: "Lock+Unlock: Redis commands per cycle", bench: "LockUnlock", unit: "cmds/op",
		floor: floorOf("Floor/roundtrip", "cmds/op", 2, 1),
	},
	{
		title: "64 goroutines, own locks (cycles/s)", bench: "Parallel", unit: "cycles/s", higher: true,
		floor:      floorOf("Floor/parallel-minimal-scripts", "cycles/s", 1, 1),
		target:     func(c cells) (string, bool) { return "≥ 1.2× best peer (issue 25)", c.bestAtLeast(1.2) },
		versusBest: 1.2,
	},
	{
		title: "64 goroutines: client CPU per cycle (µs)", bench: "Parallel", unit: "cpu-µs/cycle",
		floor: floorOf("Floor/parallel-minimal-scripts", "cpu-µs/cycle", 1, 1),
	},
	{
		title: "64 goroutines: Redis CPU per cycle (µs)", bench: "Parallel", unit: "redis-cpu-µs/cycle",
		floor: floorOf("Floor/parallel-minimal-scripts", "redis-cpu-µs/cycle", 1, 1),
	},
	{
		title: "Hot lock, 16 goroutines (acquisitions/s)", bench: "HotLock", unit: "acquisitions/s", higher: true,
		floor: oneRoundTripEach,
		target: func(c cells) (string, bool) {
			fair, ok := c.rlockIn("HotLock", "min/max")
			return "≥ 1.2× best peer, min/max ≥ 0.8", c.bestAtLeast(1.2) && ok && fair >= 0.8
		},
		versusBest: 1.2,
	},
	{title: "Hot lock: fairness, min/max acquisitions per goroutine", bench: "HotLock", unit: "min/max", higher: true},
	{title: "Hot lock: Redis commands per acquisition", bench: "HotLock", unit: "cmds/acquisition"},
	{title: "Hot lock: client CPU per acquisition (µs)", bench: "HotLock", unit: "cpu-µs/acquisition"},
	{title: "Hot lock: Redis CPU per acquisition (µs)", bench: "HotLock", unit: "redis-cpu-µs/acquisition"},
	{
		title: "Redis memory growth, 3 s of 64 goroutines at full speed (MB)", bench: "MemoryGrowth", unit: "MB-growth",
		target: func(c cells) (string, bool) {
			rl, ok := c.lib["rlock"]
			return "< 1 MB", ok && rl < 1
		},
	},
	{title: "Redis keys left by that run", bench: "MemoryGrowth", unit: "keys-left"},
	{
		title: "Handoff, 8 waiters: p50 (µs)", bench: "Handoff/waiters=8", unit: "p50-µs",
		floor: idleRoundTrip("2ms", "p50"),
		target: func(c cells) (string, bool) {
			return "≤ 3× floor, ≥ 50× better than polling peers", c.floorAtMost(3) && c.beats(polling, 50)
		},
	},
	{title: "Handoff, 8 waiters: p99 (µs)", bench: "Handoff/waiters=8", unit: "p99-µs", floor: idleRoundTrip("2ms", "p99")},
	{title: "Handoff, 8 waiters: Redis commands per handoff", bench: "Handoff/waiters=8", unit: "cmds/handoff"},
	{title: "Handoff, 8 waiters: script calls per handoff", bench: "Handoff/waiters=8", unit: "scripts/handoff"},
	{title: "Handoff, 8 waiters: client CPU per handoff (µs)", bench: "Handoff/waiters=8", unit: "cpu-µs/handoff"},
	{title: "Handoff, 8 waiters: Redis CPU per handoff (µs)", bench: "Handoff/waiters=8", unit: "redis-cpu-µs/handoff"},
	{
		title: "Handoff, 8 waiters in 8 Clients: p50 (µs)", bench: "Handoff/clients=9", unit: "p50-µs",
		target: func(c cells) (string, bool) { return "≤ rueidislock", c.atMostPeer("rueidislock") },
	},
	{
		title: "Handoff, 8 waiters in 8 Clients: Redis commands per handoff", bench: "Handoff/clients=9", unit: "cmds/handoff",
		target: func(c cells) (string, bool) { return "≤ rueidislock", c.atMostPeer("rueidislock") },
	},
	{title: "Handoff, 1 waiter: p50 (µs)", bench: "Handoff/waiters=1", unit: "p50-µs", floor: idleRoundTrip("30ms", "p50")},
	{title: "Handoff, 1 waiter: p99 (µs)", bench: "Handoff/waiters=1", unit: "p99-µs", floor: idleRoundTrip("30ms", "p99")},
	{
		title: "Handoff, 1 waiter: stalls (no wake-up in 5 s)", bench: "Handoff/waiters=1", unit: "stalls",
		target: func(c cells) (string, bool) { return "0", c.rlockBelow(0) },
	},
}, watchdogRows(10_000, "10 000"), watchdogRows(100_000, "100 000"), []row{
	{title: "Heap per held lock, 10 000 held (B)", bench: "Memory", unit: "B/held", target: atMostBytes(512)},
	{title: "Goroutine stack per held lock (B)", bench: "Memory", unit: "stack-B/held"},
	{title: "Goroutines per held lock", bench: "Memory", unit: "goroutines/held"},
	{title: "Heap per waiter, 1 000 waiting (B)", bench: "Memory", unit: "B/waiter", target: atMostBytes(512)},
	{title: "Goroutine stack per waiter, the caller's included (B)", bench: "Memory", unit: "stack-B/waiter", target: atMostBestPeer},
	{title: "Goroutines per waiter, besides the caller's", bench: "Memory", unit: "goroutines/waiter"},
	{
		title: "Allocations per Lock+Unlock", bench: "Memory", unit: "allocs/op",
		target: func(c cells) (string, bool) { return "≤ 30 (issue 25)", c.rlockBelow(30) },
	},
	{title: "Bytes allocated per Lock+Unlock", bench: "Memory", unit: "B/op"},
})

// atMostBestPeer is the target of a row where rlock must spend no more
// than the best peer (issue 25).
func atMostBestPeer(c cells) (string, bool) { return "≤ best peer (issue 25)", c.bestAtMost(1) }

// atMostBytes is the target of a memory row: at most limit bytes (issue 25).
func atMostBytes(limit float64) func(c cells) (string, bool) {
	return func(c cells) (string, bool) {
		return fmt.Sprintf("≤ %s B (issue 25)", figure(limit, true)), c.rlockBelow(limit)
	}
}

// beats reports whether rlock is at least factor times better than every
// one of peers that was measured.
func (c cells) beats(peers []string, factor float64) bool {
	rl, ok := c.lib["rlock"]
	if !ok {
		return false
	}
	for _, p := range peers {
		if v, ok := c.lib[p]; ok && rl*factor > v {
			return false
		}
	}
	return true
}

// atMostPeer reports whether rlock's figure is at most peer's.
func (c cells) atMostPeer(peer string) bool {
	rl, ok := c.lib["rlock"]
	v, measured := c.lib[peer]
	return ok && measured && rl <= v
}

// rlockBelow reports whether rlock's figure is at most limit.
func (c cells) rlockBelow(limit float64) bool {
	rl, ok := c.lib["rlock"]
	return ok && rl <= limit
}

// bestAtLeast reports whether rlock is at least limit times the best peer.
func (c cells) bestAtLeast(limit float64) bool {
	return c.hasRatios && c.hasBest && c.best > 0 && c.bestRatio >= limit
}

// compute fills in the cells of row w.
func (w row) compute(r results) (cells, bool) {
	scale := w.scale
	if scale == 0 {
		scale = 1
	}
	c := cells{lib: map[string]float64{}, res: r}
	for _, lib := range libraries {
		if v, ok := r.get(w.bench+"/"+lib, w.unit); ok {
			c.lib[lib] = v * scale
		}
	}
	if len(c.lib) == 0 {
		return c, false
	}
	if w.floor != nil {
		c.floor, c.hasFloor = w.floor(r)
	}
	for _, lib := range libraries[1:] {
		v, ok := c.lib[lib]
		if ok && (!c.hasBest || w.higher && v > c.best || !w.higher && v < c.best) {
			c.best, c.hasBest = v, true
		}
	}
	if rl, ok := c.lib["rlock"]; ok {
		c.hasRatios = true
		if c.hasFloor && c.floor > 0 {
			c.floorRatio = rl / c.floor
		}
		if c.hasBest && c.best > 0 {
			c.bestRatio = rl / c.best
		}
	}
	return c, true
}

// notes say what the floors are and how the figures were measured.
const notes = `Floors: Lock+Unlock, two EVALSHA round trips of ` + "`return 1`" + ` from one goroutine on
a default rueidis client, and what they cost (the Redis CPU row's floor is the least
pair of scripts with rlock's guarantees, Floor/minimal-scripts); 64 goroutines, that
least pair of scripts run by 64 goroutines on locks of their own through one rueidis
client, and what a cycle of it costs; the hot lock, one round trip per acquisition;
handoffs, one round trip after as long an idle as the scenario leaves between handoffs (2 ms
with 8 waiters, 30 ms with 1), at the same percentile. CPU is user+system time: the
client's from getrusage, Redis's from INFO cpu. Redis commands include those that
scripts run. The watchdog renews every second (lease 3 s). Hot lock: 16 goroutines of
one client take and release one lock; min/max is the fewest acquisitions a goroutine
made over the most. Memory growth: Redis's used_memory (MB of 10^6 bytes) and keys
(DBSIZE) after 3 s of the 64-goroutine loop, less before it, each lock taken once
before (so connections, cached scripts and a key a lock name keeps for good are in
the baseline) and no key with an expiry left from earlier runs. Heap per waiter is
measured after as many waiters on another lock warmed the waiters' client up.
`
