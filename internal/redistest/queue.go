package redistest

import (
	"context"
	"errors"
	"fmt"
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
	live, err := ReadQueue(t.Context(), rc, k)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return live
}

// WaitQueued waits until n live waiters are in the queue of fair lock k,
// and fails t after Patience, or at once when the queue is not one linked
// list.
func WaitQueued(t testing.TB, rc rueidis.Client, k keys.Keys, n int) {
	t.Helper()
	Eventually(t, fmt.Sprintf("%d waiters queued in %s", n, k.Queue), func(ctx context.Context) error {
		live, err := ReadQueue(ctx, rc, k)
		if errors.Is(err, errBrokenQueue) {
			t.Fatalf("redistest: %v", err)
		}
		if err != nil {
			return err
		}
		return Exactly("queued", len(live), n)
	})
}

// errBrokenQueue is why ReadQueue fails for a queue whose links are wrong.
var errBrokenQueue = errors.New("not one linked list")

// ReadQueue is Queued for a caller with no testing.TB, or one that waits:
// it reports what Queued fails t for as an error, which wraps
// errBrokenQueue when the links are wrong.
func ReadQueue(ctx context.Context, rc rueidis.Client, k keys.Keys) ([]string, error) {
	m, err := rc.Do(ctx, rc.B().Hgetall().Key(k.Queue).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("HGETALL %s: %w", k.Queue, err)
	}
	nowMs, err := ReadMillis(ctx, rc)
	if err != nil {
		return nil, err
	}
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
			return nil, fmt.Errorf("queue %s is %w at %q (after %q): %v", k.Queue, errBrokenQueue, w, prev, m)
		}
		if exp, err := strconv.ParseInt(m[w+"#exp"], 10, 64); err == nil && exp > nowMs {
			live = append(live, w)
		}
		prev = w
	}
	if walked != entries || m["#last"] != prev {
		return nil, fmt.Errorf("queue %s is %w: it links %d of its %d waiters, last %q: %v", k.Queue, errBrokenQueue, walked, entries, m["#last"], m)
	}
	return live, nil
}

// Millis is Redis's clock in ms, the time own leases (W#exp, F#exp) are
// kept in; it fails t when TIME does.
func Millis(t testing.TB, rc rueidis.Client) int64 {
	t.Helper()
	ms, err := ReadMillis(t.Context(), rc)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return ms
}

// ReadMillis is Millis for a caller with no testing.TB.
func ReadMillis(ctx context.Context, rc rueidis.Client) (int64, error) {
	now, err := rc.Do(ctx, rc.B().Time().Build()).AsStrSlice()
	if err != nil {
		return 0, fmt.Errorf("TIME: %w", err)
	}
	if len(now) != 2 {
		return 0, fmt.Errorf("TIME answered %v", now)
	}
	sec, err1 := strconv.ParseInt(now[0], 10, 64)
	usec, err2 := strconv.ParseInt(now[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("TIME answered %v", now)
	}
	return sec*1000 + usec/1000, nil
}
