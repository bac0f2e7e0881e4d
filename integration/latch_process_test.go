package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestLatchAwaitWakesEveryProcess: processes that Await one latch, each on
// its own subscription, all return within milliseconds of the CountDown
// that reaches 0, with no polling in between.
func TestLatchAwaitWakesEveryProcess(t *testing.T) {
	const procs = 3
	node := redistest.New(t, redistest.Config{})
	name := redistest.LockName(t)
	latch := newRlock(t, node.Client(t)).CountDownLatch(name)
	set, err := latch.TrySetCount(t.Context(), 1)
	require.NoError(t, err)
	require.True(t, set)

	dir := t.TempDir()
	var outs []string
	for i := range procs {
		out := filepath.Join(dir, "c"+strconv.Itoa(i))
		outs = append(outs, out)
		startSemaphoreChild(t, semProcConfig{Proc: "c" + strconv.Itoa(i), Addr: node.Addr(), Name: name,
			Lease: 30 * time.Second, Retry: time.Second, Out: out, Await: true})
	}
	raw := node.Client(t)
	channel := keys.NewLatch(rlock.DefaultKeyPrefix, name).Channel
	require.Eventually(t, func() bool {
		n, err := raw.Do(t.Context(), raw.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
		return err == nil && n[channel] == procs
	}, 20*time.Second, 10*time.Millisecond, "every process subscribed to the latch")

	counted := time.Now()
	require.NoError(t, latch.CountDown(t.Context()))
	for i, out := range outs {
		var woke time.Time
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(out)
			if err != nil || len(b) == 0 {
				return false
			}
			ns, err := strconv.ParseInt(string(b), 10, 64)
			woke = time.Unix(0, ns)
			return err == nil
		}, 10*time.Second, 5*time.Millisecond, "process c%d returned from Await", i)
		// Await never polls: one the message did not wake would never
		// return, which the wait above catches. How soon it woke is for the
		// log only (milliseconds on an idle machine).
		after := woke.Sub(counted)
		t.Logf("process c%d woke %v after the CountDown", i, after.Round(100*time.Microsecond))
	}
}
