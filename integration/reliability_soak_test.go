package integration

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// soakEnv sets the soak's length: RLOCK_SOAK=30m runs TestReliabilitySoak
// for thirty minutes. Unset, the soak runs briefly.
const soakEnv = "RLOCK_SOAK"

const (
	// soakSegment is the longest run of the soak. The soak is a series of
	// runs, back to back, each with a fresh deployment and its own
	// history, so that porcupine checks histories of a bounded size.
	soakSegment = time.Minute
	// briefSoakFaults is how many faults a brief soak injects, at least.
	briefSoakFaults = 3
	// maxBriefRuns bounds a brief soak: where a loaded machine makes its
	// faults slower than planned (a victim slow to hold, a newer holder
	// slow to write), it adds a run for the faults still missing, at most
	// this many runs in all.
	maxBriefRuns = 3
)

// briefRunLength is how long a brief soak's run lasts to inject need
// more faults: each takes its cycle and up to a second more (the victim
// must hold first); the last leaves its length and a recovery free.
func briefRunLength(need int) time.Duration {
	return firstFault + time.Duration(need+1)*faultCycle + 2*recovery
}

// soakFault is one kind of fault the soak draws from.
type soakFault struct {
	name  string
	fault func(r *run, ctx context.Context) (Op, error)
}

// soakFaults are the faults under which rlock promises exclusion, on one
// deployment: a Redis and two child processes in network namespaces of
// their own, child c0 the victim. (The clock jump and a restart without a
// wait are left out: they break exclusion by design. Cluster and Sentinel
// failovers need deployments of their own and run as their own scenarios.)
var soakFaults = func() []soakFault {
	faults := []soakFault{
		{"holder-stopped", (*run).stopHolder},
		{"holder-killed", (*run).killHolder},
		{"redis-paused", (*run).pauseRedis},
		{"redis-restarted", (*run).restartRedis},
	}
	for _, p := range partitions {
		faults = append(faults, soakFault{p.name, p.fault()})
	}
	return faults
}()

// TestReliabilitySoak contends for one lock from three processes while a
// fault drawn at random from soakFaults hits the victim's hold every
// faultCycle, for as long as RLOCK_SOAK says, in runs of at most
// soakSegment; unset, briefly, until it has injected briefSoakFaults faults
// (in at most maxBriefRuns runs). Every run's
// history must pass every check, and each killed holder's lock must come
// free within a lease. It logs the totals.
//
// One thing is tolerated: porcupine giving no verdict in its time. A
// minute of random faults leaves dozens of acquires and releases of
// unknown outcome, each of which may take effect at any later moment in
// the model, and on some histories its search does not end in minutes.
// Exclusion, token order, fencing and the counter are decided by the
// checker's own exact checks, which must pass.
func TestReliabilitySoak(t *testing.T) {
	total := briefRunLength(briefSoakFaults)
	raw, long := os.LookupEnv(soakEnv)
	if long {
		d, err := time.ParseDuration(raw)
		require.NoError(t, err, "%s=%q", soakEnv, raw)
		total = d
	}
	var sum verdict
	sum.margin = -1
	faults, drawn := 0, map[string]int{}
	for i, left := 0, total; more(long, i, left, faults); i++ {
		length := briefRunLength(briefSoakFaults - faults)
		if long {
			length = min(left, soakSegment)
		}
		left -= length
		t.Run(fmt.Sprintf("run%d", i), func(t *testing.T) {
			v, n := runScenario(t, scenario{name: "soak", deploy: deployNetns, victim: victimChild, mayKeep: true,
				lease: partitionLease, soakFor: length, fault: drawFault(drawn), after: (*run).checkFreedAfterKill,
				tolerate: []string{porcupineTimeout}, linearizeWithin: faultyLinearize})
			sum.add(v)
			faults += n
		})
	}
	if !long {
		require.GreaterOrEqual(t, faults, briefSoakFaults, "faults in a brief soak of at most %d runs", maxBriefRuns)
	}
	kinds := slices.Sorted(maps.Keys(drawn))
	var counts []string
	for _, k := range kinds {
		counts = append(counts, fmt.Sprintf("%s=%d", k, drawn[k]))
	}
	noVerdict := 0
	for _, msg := range sum.violations {
		if strings.HasPrefix(msg, porcupineTimeout+":") {
			noVerdict++
		}
	}
	t.Logf("soak total: length=%v ops=%d holds=%d sections=%d lost=%d stale_rejected=%d unfinished=%d faults=%d (%s) violations=%d porcupine_no_verdict=%d",
		total, sum.ops, sum.holds, sum.sections, sum.lost, sum.staleRejected, sum.unfinished, faults, strings.Join(counts, " "),
		len(sum.violations)-noVerdict, noVerdict)
}

// more says whether the soak starts its run i: a long soak while it has
// time left, a brief one until it has injected briefSoakFaults faults or
// made maxBriefRuns runs.
func more(long bool, i int, left time.Duration, faults int) bool {
	if long {
		return left > 0
	}
	return faults < briefSoakFaults && i < maxBriefRuns
}

// drawFault is a fault that, each time, injects one drawn at random from
// soakFaults, and counts it in drawn.
func drawFault(drawn map[string]int) func(r *run, ctx context.Context) (Op, error) {
	return func(r *run, ctx context.Context) (Op, error) {
		f := soakFaults[rand.N(len(soakFaults))]
		drawn[f.name]++
		return f.fault(r, ctx)
	}
}
