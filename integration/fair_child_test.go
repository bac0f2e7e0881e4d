package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// fairWaiterEnv carries a fair waiter process's fairWaiterConfig, as JSON.
// Its presence is what makes TestFairWaiterProcess run.
const fairWaiterEnv = "RLOCK_FAIR_WAITER"

// fairWaiterConfig says what a fair waiter process waits for.
type fairWaiterConfig struct {
	Addr  string        `json:"addr"`
	Name  string        `json:"name"`
	Lease time.Duration `json:"lease"`
}

// TestFairWaiterProcess is the body of the waiter processes that
// TestFairKilledWaiter starts and kills: it queues for a FairMutex and
// waits until it is killed. Run directly, it skips.
func TestFairWaiterProcess(t *testing.T) {
	raw, ok := os.LookupEnv(fairWaiterEnv)
	if !ok {
		t.Skip(fairWaiterEnv + " is unset: this test is the waiter process that TestFairKilledWaiter starts itself")
	}
	var cfg fairWaiterConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &cfg))
	rc, err := redistest.Dial(t.Context(), redistest.ClientOption(cfg.Addr))
	require.NoError(t, err)
	defer rc.Close()
	c, err := rlock.New(rc, rlock.WithLeaseTime(cfg.Lease))
	require.NoError(t, err)
	defer c.Close()
	ctx, err := c.FairMutex(cfg.Name).Lock(t.Context())
	require.NoError(t, err)
	<-ctx.Done() // killed before this, or the lock was lost
}

// startFairWaiter starts a waiter process on lock name and waits until it
// is queued, n waiters being queued before it. The process is killed, if
// still running, when t ends.
func startFairWaiter(t *testing.T, node *redistest.Node, name string, lease time.Duration, n int) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(fairWaiterConfig{Addr: node.Addr(), Name: name, Lease: lease})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFairWaiterProcess$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), fairWaiterEnv+"="+string(raw))
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	redistest.WaitQueued(t, node.Client(t), fairKeys(name), n+1) // the waiter process queued
	return cmd
}

// TestFairKilledWaiter kills a waiter process (SIGKILL: no clean-up of any
// kind) that is queued for a FairMutex behind a holder, with a live waiter
// behind it.
//
//   - Queued: its entry drops out of the queue within its lease, and the
//     holder's Unlock hands the lock straight to the live waiter.
//   - Granted: the holder unlocks at once, so the dead process is handed
//     the lock; it holds it only for what was left of its entry's lease,
//     after which the live waiter, told how long that lease was, takes it.
func TestFairKilledWaiter(t *testing.T) {
	const lease = 1500 * time.Millisecond // the dead process's
	node := redistest.Shared(t)
	for _, granted := range []bool{false, true} {
		what := map[bool]string{false: "Queued", true: "Granted"}[granted]
		t.Run(what, func(t *testing.T) {
			name := redistest.LockName(t)
			k := fairKeys(name)
			admin := node.Client(t)
			holder := newRlock(t, node.Client(t)).FairMutex(name)
			held, err := holder.Lock(t.Context())
			require.NoError(t, err)
			proc := startFairWaiter(t, node, name, lease, 0)
			dead := redistest.Queued(t, admin, k)[0]

			live := newRlock(t, node.Client(t)).FairMutex(name)
			got := make(chan context.Context, 1)
			go func() {
				ctx, err := live.Lock(t.Context())
				assert.NoError(t, err)
				got <- ctx
			}()
			redistest.WaitQueued(t, admin, k, 2) // the live waiter queued behind the process
			require.NoError(t, proc.Process.Kill())
			killed := time.Now()

			if !granted {
				redistest.WaitQueued(t, admin, k, 1) // the killed process's entry drops out
				// The bound is the property: an entry nothing renews goes
				// when its lease ends, give or take a second of a loaded
				// machine.
				assert.Less(t, time.Since(killed), lease+time.Second, "within its lease")
			}
			start := time.Now()
			require.NoError(t, holder.Unlock(held))
			if granted {
				owns, err := admin.Do(t.Context(), admin.B().Hexists().Key(k.Hash).Field(dead).Build()).AsBool()
				require.NoError(t, err)
				require.True(t, owns, "the killed process, first in line, was handed the lock")
			}
			select {
			case ctx := <-got:
				// The bounds are the property. A handoff comes on the
				// Unlock: a live waiter it missed would sleep out the
				// holder's 30 s lease, which 5 s tells apart on a loaded
				// machine too. A grant to the dead process ends with its
				// lease, give or take a second.
				limit := 5 * time.Second
				if granted {
					limit = lease + time.Second // the dead process's grant lease runs out first
				}
				assert.Less(t, time.Since(start), limit, "the live waiter took the lock")
				require.NoError(t, live.Unlock(ctx))
			case <-time.After(lease + 5*time.Second):
				t.Fatal("the live waiter never got the lock")
			}
			assert.Empty(t, redistest.Queued(t, admin, k), "nobody left in the queue")
		})
	}
}
