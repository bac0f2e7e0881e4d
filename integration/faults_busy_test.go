package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// busyArgs make Redis answer BUSY to other clients once a script has run
// for 100 ms (the default is 5 s).
var busyArgs = []string{"--busy-reply-threshold", "100"}

// spin is a script that keeps Redis busy for ARGV[1] ms.
const spin = `local t = redis.call('time')
local deadline = t[1] * 1000000 + t[2] + ARGV[1] * 1000
repeat t = redis.call('time') until t[1] * 1000000 + t[2] >= deadline
return 1`

// busyFor makes node run a script for d on a client of its own, and
// returns once Redis answers other clients with BUSY. The returned func
// waits until the script has ended and reports when it did; the test's
// clean-up waits for it too.
func busyFor(t *testing.T, node *redistest.Node, d time.Duration) (ended func() time.Time) {
	t.Helper()
	opt := redistest.ClientOption(node.Addr())
	opt.ConnWriteTimeout = d + 5*time.Second // the script's reply takes d
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	probe := node.Client(t) // connected now: a connection is refused while Redis is busy

	done := make(chan error, 1)
	go func() {
		done <- rc.Do(context.Background(), rc.B().Eval().Script(spin).Numkeys(0).Arg(strconv.FormatInt(d.Milliseconds(), 10)).Build()).Error()
	}()
	ended = sync.OnceValue(func() time.Time {
		assert.NoError(t, <-done, "the busy script")
		return time.Now()
	})
	t.Cleanup(func() { ended() })

	require.Eventually(t, func() bool {
		return hasRedisCode(probe.Do(t.Context(), probe.B().Ping().Build()).Error(), "BUSY")
	}, d/2, 5*time.Millisecond, "Redis never answered BUSY")
	return ended
}

// TestFaultBusyScriptResent runs Lock and Unlock while another client's
// script keeps Redis busy: Redis answers them BUSY, which passes, so rlock
// resends them until the script ends, and both succeed afterwards, well
// within the retry timeout.
func TestFaultBusyScriptResent(t *testing.T) {
	node := faultNode(t, busyArgs...)
	raw := node.Client(t)
	heldName, takenName := redistest.LockName(t)+":held", redistest.LockName(t)+":taken"
	var acquiresBusy, releasesBusy atomic.Int32 // BUSY replies to rlock's scripts
	rc := &hookClient{Client: node.Client(t), hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		script := scriptOn(cmd, lockKeys(heldName).Hash) + scriptOn(cmd, lockKeys(takenName).Hash)
		res := run()
		if hasRedisCode(res.Error(), "BUSY") {
			switch script {
			case acquireScript:
				acquiresBusy.Add(1)
			case releaseScript:
				releasesBusy.Add(1)
			}
		}
		return res
	}}
	c := newRlock(t, rc)
	held, taken := c.Mutex(heldName), c.Mutex(takenName)
	heldCtx, err := held.Lock(t.Context())
	require.NoError(t, err)

	ended := busyFor(t, node, 1500*time.Millisecond)
	var (
		wg                   sync.WaitGroup
		takenCtx             context.Context
		lockErr, unlockErr   error
		lockedAt, unlockedAt time.Time
	)
	wg.Go(func() {
		takenCtx, lockErr = taken.Lock(t.Context())
		lockedAt = time.Now()
	})
	wg.Go(func() {
		unlockErr = held.Unlock(heldCtx)
		unlockedAt = time.Now()
	})
	end := ended()
	wg.Wait()

	require.NoError(t, lockErr, "Lock through BUSY")
	require.NoError(t, unlockErr, "Unlock through BUSY")
	assert.GreaterOrEqual(t, acquiresBusy.Load(), int32(2), "Lock met BUSY and resent")
	assert.GreaterOrEqual(t, releasesBusy.Load(), int32(2), "Unlock met BUSY and resent")
	assert.False(t, lockedAt.Before(end.Add(-100*time.Millisecond)), "Lock succeeded only once the script ended")
	assert.False(t, unlockedAt.Before(end.Add(-100*time.Millisecond)), "Unlock succeeded only once the script ended")
	assertHoldCount(t, takenCtx, taken, 1)
	assert.False(t, keyExists(t, raw, lockKeys(heldName).Hash), "the unlocked lock is free")
	require.NoError(t, taken.Unlock(takenCtx))
}

// TestFaultBusyScriptOutlastsRetry runs Lock and Unlock while Redis stays
// busy for longer than the retry timeout: both give up with an error soon
// after the retry timeout, before the script ends. The refused Lock leaves
// no key; the failed Unlock stops renewal and ends the lock context, so the
// lease frees the lock.
func TestFaultBusyScriptOutlastsRetry(t *testing.T) {
	const (
		retry = 300 * time.Millisecond
		lease = 2 * time.Second
		busy  = 1500 * time.Millisecond
	)
	node := faultNode(t, busyArgs...)
	raw := node.Client(t)
	c := newRlock(t, node.Client(t), rlock.WithRetryTimeout(retry), rlock.WithLeaseTime(lease))
	held, refused := c.Mutex(redistest.LockName(t)+":held"), c.Mutex(redistest.LockName(t)+":refused")
	heldCtx, err := held.Lock(t.Context())
	require.NoError(t, err)

	ended := busyFor(t, node, busy)
	var (
		wg                 sync.WaitGroup
		lockErr, unlockErr error
	)
	wg.Go(func() { _, lockErr = refused.Lock(t.Context()) })
	wg.Go(func() { unlockErr = held.Unlock(heldCtx) })
	wg.Wait()
	failedAt := time.Now()
	end := ended()

	assert.True(t, failedAt.Before(end), "Lock and Unlock gave up before the script ended")
	for call, err := range map[string]error{"Lock": lockErr, "Unlock": unlockErr} {
		// BUSY may also refuse the handshake of a connection rueidis opens
		// meanwhile, which it reports as its own error quoting Redis's.
		require.Error(t, err, call)
		assert.True(t, strings.Contains(err.Error(), "BUSY") || errors.Is(err, context.DeadlineExceeded),
			"%s fails with BUSY or with its retry timeout: %v", call, err)
	}
	assert.ErrorIs(t, context.Cause(heldCtx), rlock.ErrLockLost, "a failed Unlock ends the lock context as lost")
	assert.False(t, keyExists(t, raw, lockKeys(refused.Name()).Hash), "the refused Lock left no key")
	assert.Eventually(t, keyGone(t, raw, lockKeys(held.Name()).Hash), lease+time.Second, 50*time.Millisecond, "no renewal after the failed Unlock: the lease frees the lock")
}
