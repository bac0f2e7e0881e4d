package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redistest"
)

// watchdogBenchLease is the lease of the watchdog scenario: short, so that a
// renewal round comes every second.
const watchdogBenchLease = 3 * time.Second

// benchWatchdog measures what keeping many locks alive costs: n locks held
// in one Client with a lease of watchdogBenchLease, renewed every third of
// it. Each iteration is one renewal round (lease/3 of waiting); it reports
// the cost of a round (script calls, Redis commands, CPU in this process
// and in Redis), and how many locks were found lost when they were
// released at the end: renewal should have kept every one.
//
// rueidislock, set to renew as often, renews each lock on its own; it runs
// at 10 000 locks only, as 100 000 would be a goroutine and a call per
// lock every second. redsync and redislock do not renew by themselves.
func benchWatchdog(b *testing.B, node *redistest.Node) {
	for _, n := range []int{10_000, 100_000} {
		for _, p := range peers {
			if !p.renews || n > 10_000 && p.name != "rlock" {
				continue
			}
			b.Run(fmt.Sprintf("locks=%d/%s", n, p.name), func(b *testing.B) {
				benchmarkRenewals(b, node, p, n)
			})
		}
	}
}

// benchmarkRenewals holds n locks of p on node and measures their renewal.
func benchmarkRenewals(b *testing.B, node *redistest.Node, p peer, n int) {
	l := p.open(b, node.Addr(), watchdogBenchLease)
	unlocks := holdMany(b, l, lockNames(benchName(b), n), concurrency)

	round := watchdogBenchLease / 3
	// Taking the locks took a while: let their first renewals pass, so
	// that every round measured renews every lock once.
	time.Sleep(round) // benchmark pacing: a round of the peer's own, which has no hooks to wait on
	c := startCost(b, node.Client(b))
	for b.Loop() {
		time.Sleep(round) // the thing measured: what a round of renewals costs
	}
	c.report(b.N, "round")
	b.ReportMetric(float64(releaseAll(b, unlocks, concurrency)), "lost-locks")
}
