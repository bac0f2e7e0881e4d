package redistest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
)

// Queued returns the live waiters in the queue of fair lock k (see
// lua/queue.lua), first to last: those whose own lease has not passed by
// Redis's clock, as the scripts count them. It fails t when the queue's
// links are not one list from '#head' to '#last' through every waiter in
// it, each linked back to the one before.
func Queued(t testing.TB, rc rueidis.Client, k keys.Keys) []string {
	t.Helper()
	m, err := rc.Do(t.Context(), rc.B().Hgetall().Key(k.Queue).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("redistest: HGETALL %s: %v", k.Queue, err)
	}
	now, err := rc.Do(t.Context(), rc.B().Time().Build()).AsStrSlice()
	if err != nil || len(now) != 2 {
		t.Fatalf("redistest: TIME: %v %v", now, err)
	}
	sec, _ := strconv.ParseInt(now[0], 10, 64)
	usec, _ := strconv.ParseInt(now[1], 10, 64)
	nowMs := sec*1000 + usec/1000
	entries := 0
	for f := range m {
		if !strings.Contains(f, "#") {
			entries++
		}
	}
	var live []string
	walked, prev := 0, ""
	for w, ok := m["#head"]; ok; w, ok = m[w+"#next"] {
		if walked++; walked > entries || m[w] == "" || m[w+"#prev"] != prev {
			t.Fatalf("redistest: queue %s is not one linked list at %q (after %q): %v", k.Queue, w, prev, m)
		}
		if exp, err := strconv.ParseInt(m[w+"#exp"], 10, 64); err == nil && exp > nowMs {
			live = append(live, w)
		}
		prev = w
	}
	if walked != entries || m["#last"] != prev {
		t.Fatalf("redistest: queue %s links %d of its %d waiters, last %q: %v", k.Queue, walked, entries, m["#last"], m)
	}
	return live
}
