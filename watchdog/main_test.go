package watchdog_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/watchdog"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// start returns a Watchdog on rc, closed when t ends. A nil log logs to t.
func start(t *testing.T, rc rueidis.Client, lease time.Duration, log *slog.Logger) *watchdog.Watchdog {
	t.Helper()
	if log == nil {
		log = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	w, err := watchdog.New(rc, watchdog.Config{Lease: lease, Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, w.Close()) })
	return w
}

// testWriter writes to t's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// funcs is a watchdog.Holder made of funcs, either of which may be nil.
type funcs struct {
	renewed func(sent time.Time)
	lost    func(*watchdog.Entry)
}

func (f funcs) Renewed(sent time.Time) {
	if f.renewed != nil {
		f.renewed(sent)
	}
}

func (f funcs) Lost(h *watchdog.Entry) {
	if f.lost != nil {
		f.lost(h)
	}
}

// recorder counts the callbacks of the holds it makes.
type recorder struct {
	mu      sync.Mutex
	sent    map[*watchdog.Entry][]time.Time // Renewed's sent times, per hold
	renewed int
	lost    map[*watchdog.Entry]int
}

func newRecorder() *recorder {
	return &recorder{sent: map[*watchdog.Entry][]time.Time{}, lost: map[*watchdog.Entry]int{}}
}

// holds returns n holds named after t, recorded by r.
func (r *recorder) holds(t testing.TB, n int) []*watchdog.Entry {
	out := make([]*watchdog.Entry, n)
	for i := range out {
		h := &watchdog.Entry{Key: fmt.Sprintf("watchdog:{%s:%d}", t.Name(), i), Field: "owner:" + strconv.Itoa(i)}
		h.Holder = funcs{
			renewed: func(sent time.Time) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.sent[h] = append(r.sent[h], sent)
				r.renewed++
			},
			lost: func(*watchdog.Entry) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.lost[h]++
			},
		}
		out[i] = h
	}
	return out
}

// renewals returns the number of Renewed calls so far.
func (r *recorder) renewals() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewed
}

// sentTimes returns the sent times Renewed reported for h.
func (r *recorder) sentTimes(h *watchdog.Entry) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.sent[h]...)
}

// losses returns the number of Lost calls for h.
func (r *recorder) losses(h *watchdog.Entry) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost[h]
}

// lock makes each hold's key look held by its field for lease, as the
// acquire script leaves it.
func lock(t testing.TB, rc rueidis.Client, lease time.Duration, holds ...*watchdog.Entry) {
	t.Helper()
	cmds := make(rueidis.Commands, 0, 2*len(holds))
	for _, h := range holds {
		cmds = append(cmds,
			rc.B().Hset().Key(h.Key).FieldValue().FieldValue(h.Field, "1").Build(),
			rc.B().Pexpire().Key(h.Key).Milliseconds(lease.Milliseconds()).Build())
	}
	for _, res := range rc.DoMulti(context.Background(), cmds...) {
		require.NoError(t, res.Error())
	}
}

// addAll adds every hold to w.
func addAll(t testing.TB, w *watchdog.Watchdog, holds ...*watchdog.Entry) {
	t.Helper()
	for _, h := range holds {
		require.NoError(t, w.Add(h))
	}
}

// exists reports whether key exists.
func exists(t testing.TB, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	return n == 1
}

// calls returns how many times the server has run each command named, from
// INFO commandstats: "evalsha", "eval", "script|load", ...
func calls(t testing.TB, rc rueidis.Client, names ...string) map[string]int64 {
	t.Helper()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	out := make(map[string]int64, len(names))
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, stats, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "cmdstat_"), ":")
		if !ok {
			continue
		}
		for _, want := range names {
			if name != want {
				continue
			}
			field, _, _ := strings.Cut(stats, ",")
			n, err := strconv.ParseInt(strings.TrimPrefix(field, "calls="), 10, 64)
			require.NoError(t, err, "parse %q", sc.Text())
			out[name] = n
		}
	}
	return out
}

// renewCalls returns how many renew script calls the server has run.
func renewCalls(t testing.TB, rc rueidis.Client) int64 {
	c := calls(t, rc, "evalsha", "eval")
	return c["evalsha"] + c["eval"]
}

// warnings is a slog handler that counts Warn records.
type warnings struct {
	mu sync.Mutex
	n  int
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
	}
	return nil
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
