package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
)

// What a test reads from Redis to check a lock from the server's side. Key
// and channel names come from keys.Keys, never from a layout written here.

// LastingKeys lists which of a lock's lasting keys, its hash and its fencing
// counter, exist. Fences are left out: they are written only after a lost
// reply, and expire on their own.
func LastingKeys(t testing.TB, rc rueidis.Client, k keys.Keys) []string {
	t.Helper()
	var out []string
	for _, key := range []string{k.Hash, k.Token} {
		n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatalf("redistest: EXISTS %s: %v", key, err)
		}
		if n == 1 {
			out = append(out, key)
		}
	}
	return out
}

// Subscribers counts the clients subscribed to channel, plainly or sharded.
// On a Cluster only sharded subscribers are counted: PUBSUB NUMSUB there
// answers for whichever node it reaches.
func Subscribers(ctx context.Context, rc rueidis.Client, channel string) (int64, error) {
	var cmds []rueidis.Completed
	if rc.Mode() != rueidis.ClientModeCluster {
		cmds = append(cmds, rc.B().PubsubNumsub().Channel(channel).Build())
	}
	cmds = append(cmds, rc.B().PubsubShardnumsub().Channel(channel).Build())
	var n int64
	for _, cmd := range cmds {
		res, err := rc.Do(ctx, cmd).AsIntMap()
		if err != nil {
			return 0, fmt.Errorf("count subscribers to %s: %w", channel, err)
		}
		n += res[channel]
	}
	return n, nil
}

// WaitSubscribers waits until exactly n clients are subscribed to channel,
// plainly or sharded, as Subscribers counts them: n rlock Clients with
// waiters there, say, since a Client subscribes once for all its waiters.
// It fails t after Patience.
func WaitSubscribers(t testing.TB, rc rueidis.Client, channel string, n int64) {
	t.Helper()
	Eventually(t, fmt.Sprintf("%d subscribers on %s", n, channel), func(ctx context.Context) error {
		got, err := Subscribers(ctx, rc, channel)
		if err != nil {
			return err
		}
		return Exactly("subscribers", got, n)
	})
}

// AssertNoSubscribers waits until nobody listens on a lock's unlock channel
// any more, nor on any Client's inbox for it (pubsub.Inbox), plainly or
// sharded, and fails t if someone still does after Patience.
func AssertNoSubscribers(t testing.TB, rc rueidis.Client, k keys.Keys) {
	t.Helper()
	WaitSubscribers(t, rc, k.Channel, 0)
	Eventually(t, "no inbox for "+k.Channel, func(ctx context.Context) error {
		inboxes, err := Inboxes(ctx, rc, k.Channel)
		if err != nil {
			return err
		}
		return Exactly("inboxes subscribed", len(inboxes), 0)
	})
}

// Inboxes lists the Clients' inboxes for channel that someone listens on,
// plainly or sharded, asking every node.
func Inboxes(ctx context.Context, rc rueidis.Client, channel string) ([]string, error) {
	pattern := globEscaper.Replace(channel) + "@*"
	var out []string
	for addr, node := range rc.Nodes() {
		for _, cmd := range []rueidis.Completed{
			node.B().PubsubChannels().Pattern(pattern).Build(),
			node.B().PubsubShardchannels().Pattern(pattern).Build(),
		} {
			names, err := node.Do(ctx, cmd).AsStrSlice()
			if err != nil {
				return nil, fmt.Errorf("list the inboxes for %s on %s: %w", channel, addr, err)
			}
			out = append(out, names...)
		}
	}
	return out, nil
}

// globEscaper escapes what a Redis glob pattern treats as special.
var globEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// Stats is a snapshot of a server's counters, from INFO commandstats and cpu.
type Stats struct {
	Commands int64            // every command run, including those inside scripts
	Calls    map[string]int64 // calls per command, by lower-case name
	CPU      time.Duration    // the server's CPU time, user and system
}

// Scripts is how many script calls, EVALSHA and EVAL, the snapshot counts.
func (s Stats) Scripts() int64 { return s.Calls["evalsha"] + s.Calls["eval"] }

// ReadStats takes a snapshot of rc's server. The INFO call that reads it is
// one command, which the next snapshot counts.
func ReadStats(t testing.TB, rc rueidis.Client) Stats {
	t.Helper()
	info, err := rc.Do(t.Context(), rc.B().Info().Section("commandstats", "cpu").Build()).ToString()
	if err != nil {
		t.Fatalf("redistest: INFO: %v", err)
	}
	s := Stats{Calls: map[string]int64{}}
	for line := range strings.SplitSeq(info, "\r\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if name, found := strings.CutPrefix(key, "cmdstat_"); found {
			// cmdstat_<name>:calls=<n>,usec=...
			field, _, _ := strings.Cut(value, ",")
			n, err := strconv.ParseInt(strings.TrimPrefix(field, "calls="), 10, 64)
			if err != nil {
				t.Fatalf("redistest: parse %q: %v", line, err)
			}
			s.Calls[name] = n
			s.Commands += n
			continue
		}
		if key == "used_cpu_user" || key == "used_cpu_sys" {
			sec, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("redistest: parse %q: %v", line, err)
			}
			s.CPU += time.Duration(sec * float64(time.Second))
		}
	}
	return s
}

// ScriptCalls counts the scripts rc's server has run, EVALSHA and EVAL.
func ScriptCalls(t testing.TB, rc rueidis.Client) int {
	t.Helper()
	return int(ReadStats(t, rc).Scripts())
}

// Usage is how much a server holds: INFO memory's used_memory, and DBSIZE
// and the keys with an expiry in database 0, the one every client of the
// harness uses.
type Usage struct {
	UsedMemory int64 // used_memory: bytes the server's allocator holds
	Keys       int64 // DBSIZE
	Volatile   int64 // keys with an expiry, which will go on their own
}

// ReadUsage reads what rc's server holds. It returns errors rather than
// failing a test, so that a goroutine sampling during a run may call it.
// On a Cluster it answers for whichever node it reaches.
func ReadUsage(ctx context.Context, rc rueidis.Client) (Usage, error) {
	res := rc.DoMulti(ctx,
		rc.B().Info().Section("memory", "keyspace").Build(),
		rc.B().Dbsize().Build())
	info, err := res[0].ToString()
	if err != nil {
		return Usage{}, fmt.Errorf("INFO memory keyspace: %w", err)
	}
	var u Usage
	if u.Keys, err = res[1].AsInt64(); err != nil {
		return Usage{}, fmt.Errorf("DBSIZE: %w", err)
	}
	found := false
	for line := range strings.SplitSeq(info, "\r\n") {
		key, value, ok := strings.Cut(line, ":")
		switch {
		case !ok:
		case key == "used_memory":
			if u.UsedMemory, err = strconv.ParseInt(value, 10, 64); err != nil {
				return Usage{}, fmt.Errorf("parse %q: %w", line, err)
			}
			found = true
		case key == "db0":
			// db0:keys=<n>,expires=<n>,avg_ttl=<ms>,...
			for field := range strings.SplitSeq(value, ",") {
				if n, ok := strings.CutPrefix(field, "expires="); ok {
					if u.Volatile, err = strconv.ParseInt(n, 10, 64); err != nil {
						return Usage{}, fmt.Errorf("parse %q: %w", line, err)
					}
				}
			}
		}
	}
	if !found {
		return Usage{}, errors.New("INFO memory has no used_memory")
	}
	return u, nil
}
