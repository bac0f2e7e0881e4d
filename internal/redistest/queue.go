package redistest

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
)

// Queued returns the live waiters in the queue of fair lock k (see
// lua/queue.lua): those whose own lease has not passed by Redis's clock,
// as the scripts count them, in the order of their tickets.
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
	var ws []string
	for f := range m {
		exp, err := strconv.ParseInt(m[f+"#exp"], 10, 64)
		if !strings.Contains(f, "#") && err == nil && exp > nowMs {
			ws = append(ws, f)
		}
	}
	ticket := func(w string) int64 {
		n, _ := strconv.ParseInt(m[w], 10, 64)
		return n
	}
	slices.SortFunc(ws, func(a, b string) int { return int(ticket(a) - ticket(b)) })
	return ws
}
