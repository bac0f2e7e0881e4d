package redistest

import (
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
)

// Queued returns the live waiters in the queue of fair lock k (see
// lua/queue.lua), first to last: those whose own lease has not passed by
// Redis's clock, as the scripts count them.
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
	for w, ok := m["#head"]; ok && len(ws) <= len(m); w, ok = m[w+"#next"] {
		if exp, err := strconv.ParseInt(m[w+"#exp"], 10, 64); err == nil && exp > nowMs {
			ws = append(ws, w)
		}
	}
	return ws
}
