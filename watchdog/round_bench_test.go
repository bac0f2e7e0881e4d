package watchdog

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redistest"
)

// BenchmarkRound measures one renewal round of every hold: batching, the
// pipelined renew calls to a real Redis, settling the replies and running
// the callbacks. It drives rounds itself, without the goroutine, and
// reports the renew calls a round makes alongside its time. On a Cluster,
// lock names spread over the slots, so batches hold few keys each.
func BenchmarkRound(b *testing.B) {
	for _, cluster := range []bool{false, true} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("cluster=%v/holds=%d", cluster, n), func(b *testing.B) {
				rc, servers := benchRedis(b, cluster)
				benchmarkRound(b, rc, servers, n)
			})
		}
	}
}

func benchmarkRound(b *testing.B, rc rueidis.Client, servers []rueidis.Client, n int) {
	w, err := newWatchdog(rc, Config{Lease: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var renewed counter
	holds := make([]*Entry, n)
	for i := range holds {
		holds[i] = &Entry{
			Key:    "bench:{" + strconv.Itoa(i) + "}",
			Field:  "owner",
			Holder: &renewed,
		}
	}
	lockAll(b, rc, holds)
	for _, h := range holds {
		if err := w.Add(h); err != nil {
			b.Fatal(err)
		}
	}

	ctx := context.Background()
	now := time.Now()
	before := evalCalls(b, servers)
	rounds := 0
	for b.Loop() {
		now = now.Add(2 * time.Hour) // every hold is due
		w.renew(ctx, now)
		rounds++
	}
	calls := evalCalls(b, servers) - before
	if int(renewed) != n*rounds {
		b.Fatalf("%d renewals in %d rounds of %d holds", renewed, rounds, n)
	}
	b.ReportMetric(float64(calls)/float64(rounds), "calls/round")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rounds*n), "ns/hold")
}

// benchRedis starts a Redis, or a Cluster, for b and returns a client of it
// and a plain client of each server, for counting calls.
func benchRedis(b *testing.B, cluster bool) (rueidis.Client, []rueidis.Client) {
	if !cluster {
		rc := redistest.New(b, redistest.Config{}).Client(b)
		return rc, []rueidis.Client{rc}
	}
	if !slices.Contains(redistest.Backends(b), redistest.Process) {
		b.Skip("a Cluster needs redis-server on PATH")
	}
	c := redistest.NewCluster(b, redistest.ClusterConfig{})
	var servers []rueidis.Client
	for _, addr := range c.Addrs() {
		opt := redistest.ClientOption(addr)
		opt.ForceSingleClient = true
		sc, err := rueidis.NewClient(opt)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(sc.Close)
		servers = append(servers, sc)
	}
	return c.Client(b), servers
}

// lockAll makes every hold's key a lock hash holding its field.
func lockAll(b *testing.B, rc rueidis.Client, holds []*Entry) {
	b.Helper()
	for chunk := range slices.Chunk(holds, 10_000) {
		cmds := make(rueidis.Commands, 0, len(chunk))
		for _, h := range chunk {
			cmds = append(cmds, rc.B().Hset().Key(h.Key).FieldValue().FieldValue(h.Field, "1").Build())
		}
		for _, res := range rc.DoMulti(context.Background(), cmds...) {
			if err := res.Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// evalCalls returns how many EVALSHA and EVAL calls the servers have run.
func evalCalls(b *testing.B, servers []rueidis.Client) int64 {
	b.Helper()
	var total int64
	for _, sc := range servers {
		info, err := sc.Do(context.Background(), sc.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.Lines(info) {
			for _, prefix := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
				if rest, ok := strings.CutPrefix(line, prefix); ok {
					n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
					if err != nil {
						b.Fatal(err)
					}
					total += n
				}
			}
		}
	}
	return total
}

// counter is a Holder that counts renewals.
type counter int

func (c *counter) Renewed(time.Time) { *c++ }
func (c *counter) Lost(*Entry)       {}
