package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/rlock"
)

// TestHostileDoRacesUnlock races Do calls of one owner against its final
// Unlock from another goroutine sharing the lock context: the calls take
// turns, so every Do ran while the lock was held or failed and ran
// nothing, each Do that succeeded ran once, and no Do begun after Unlock
// returned succeeds.
func TestHostileDoRacesUnlock(t *testing.T) {
	const trials, doers = 50, 3
	c := sharedClient(t)
	raw := redistest.Shared(t).Client(t)
	for trial := range trials {
		mu := c.Mutex(fmt.Sprintf("%s:%d", redistest.LockName(t), trial))
		key := mu.Key("n")
		ctx, err := mu.Lock(t.Context())
		require.NoError(t, err)

		var ran atomic.Int64
		var unlocked atomic.Bool
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			assert.NoError(t, mu.Unlock(ctx), "trial %d: the final Unlock", trial)
			unlocked.Store(true)
		})
		for range doers {
			wg.Go(func() {
				<-start
				for {
					after := unlocked.Load()
					_, err := mu.Do(ctx, raw.B().Incr().Key(key).Build())
					if err != nil {
						assert.True(t, errors.Is(err, context.Canceled) || errors.Is(err, rlock.ErrNotHeld),
							"trial %d: a Do that lost the race fails as not held: %v", trial, err)
						return
					}
					assert.False(t, after, "trial %d: a Do begun after Unlock returned succeeded", trial)
					ran.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		n, _ := strconv.ParseInt(get(t, raw, key), 10, 64)
		assert.Equal(t, ran.Load(), n, "trial %d: each successful Do ran once, and no failed one ran", trial)
		assert.False(t, exists(t, raw, lockKeys(mu.Name()).Hash), "trial %d: the lock is free", trial)
		if t.Failed() {
			break
		}
	}
}

// TestHostileDoCancelledMidRequest cancels Do while Redis holds its call
// back (CLIENT PAUSE WRITE): the call is settled before Do returns, and Do
// says truly whether the commands ran; after every call reached Redis,
// the key shows it.
func TestHostileDoCancelledMidRequest(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	admin := node.Client(t)
	for trial := range 5 {
		c := newDrainable(t, redistest.Setup{Node: node})
		mu := c.Mutex(fmt.Sprintf("%s:%d", redistest.LockName(t), trial))
		key := mu.Key("n")
		lctx, err := mu.Lock(t.Context())
		require.NoError(t, err)

		require.NoError(t, admin.Do(t.Context(), admin.B().ClientPause().Timeout(300).Write().Build()).Error())
		ctx, cancel := context.WithTimeout(lctx, 50*time.Millisecond)
		_, err = mu.Do(ctx, c.rc.B().Incr().Key(key).Build())
		cancel()
		require.Error(t, err, "trial %d: the call was held back past the deadline", trial)
		ran := errors.Is(err, rlock.ErrResultsLost)
		if !ran {
			assert.ErrorIs(t, err, context.DeadlineExceeded, "trial %d", trial)
		}
		require.NoError(t, mu.Unlock(lctx))
		drain(t, c)
		t.Logf("trial %d: %v", trial, err)
		want := map[bool]string{true: "1", false: ""}[ran]
		assert.Equal(t, want, get(t, admin, key), "trial %d: Do said ran=%v (%v)", trial, ran, err)
	}
}

// TestHostileDoLateCopy plays do.lua's calls as the request protocol sends
// them when replies are lost: a resend after a call that ran does not run
// the commands again; a settling call fences a call that had not arrived,
// and its copy arriving later runs nothing, held or not.
func TestHostileDoLateCopy(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	name := redistest.LockName(t)
	k := lockKeys(name)
	data := k.Hash + ":data:n"
	owner := "c:o"
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(k.Hash).FieldValue().FieldValue(owner, "1").FieldValue(owner+"#seq", "1").Build()).Error())
	require.NoError(t, rc.Do(t.Context(), rc.B().Pexpire().Key(k.Hash).Milliseconds(30000).Build()).Error())
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(k.Hash, k.Fence, data).Build()) })

	do := func(seq, first, superseded int, run bool) []rueidis.RedisMessage {
		args := []string{owner, strconv.Itoa(seq), strconv.Itoa(first), "0", strconv.Itoa(superseded), "60000"}
		if run {
			args[3] = "1"
			args = append(args, "2", "INCR", data)
		}
		reply, err := lua.Do.Exec(t.Context(), rc, []string{k.Hash, k.Fence}, args).ToArray()
		require.NoError(t, err)
		require.Len(t, reply, 2)
		return reply
	}
	code := func(reply []rueidis.RedisMessage) lua.Code {
		n, err := reply[0].AsInt64()
		require.NoError(t, err)
		return lua.Code(n)
	}

	// Request 1: its first call ran, and its reply was lost.
	assert.Equal(t, lua.Ran, code(do(11, 10, 0, true)))
	assert.Equal(t, lua.RanEarlier, code(do(12, 10, 11, true)), "the resend does not run the commands again")
	assert.Equal(t, "1", get(t, rc, data))

	// Request 2: its first call is still on the way when the caller gives up.
	late := 21
	assert.Equal(t, lua.NotRun, code(do(22, 20, late, false)), "the settling call: nothing ran")
	assert.Equal(t, lua.Stale, code(do(late, 20, 0, true)), "the late copy is fenced while held")
	require.NoError(t, rc.Do(t.Context(), rc.B().Del().Key(k.Hash).Build()).Error())
	assert.Equal(t, lua.NotHeld, code(do(late, 20, 0, true)), "and runs nothing once the lock is gone")
	assert.Equal(t, "1", get(t, rc, data), "no copy ran twice, no late copy ran")
}

// TestHostileDoRedisKilled kills Redis between Lock and Do: Do fails
// within the retry timeout; once Redis is back empty, Do is refused as
// lost, and nothing was written.
func TestHostileDoRedisKilled(t *testing.T) {
	node := redistest.New(t, redistest.Config{})
	if !node.Controllable() {
		t.Skip("REDIS_ADDR is set: the test kills the Redis it runs")
	}
	rc := node.Client(t)
	const retry = 300 * time.Millisecond
	mu := newRlock(t, rc, rlock.WithRetryTimeout(retry)).Mutex(redistest.LockName(t))
	key := mu.Key("v")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	require.NoError(t, node.Kill(t.Context()))
	start := time.Now()
	_, err = mu.Do(ctx, rc.B().Set().Key(key).Value("x").Build())
	require.Error(t, err, "Redis is down")
	assert.Less(t, time.Since(start), retry+redistest.Patience/4, "Do gives up within the retry timeout")

	require.NoError(t, node.Restart(t.Context()))
	redistest.Eventually(t, "Do reaches the restarted Redis", func(context.Context) error {
		_, err = mu.Do(ctx, rc.B().Set().Key(key).Value("x").Build())
		if errors.Is(err, rlock.ErrLockLost) {
			return nil
		}
		return fmt.Errorf("not refused as lost yet: %w", err)
	})
	assert.Empty(t, get(t, rc, key), "no Do wrote to the Redis that lost the lock")
	assert.ErrorIs(t, context.Cause(ctx), rlock.ErrLockLost)
}

// TestDoWithADetachedContextOfAnEndedHold: a context detached from a lock
// context (context.WithoutCancel, as for clean-up that must not be
// cancelled) outlives its hold, which ends (its Unlock, or a ForceUnlock
// by another Client that then took the lock and wrote); the owner then
// locks again. Do with the detached context writes nothing, and fails
// with ErrNotHeld, or with the loss (ErrLockLost), and Unlock with it
// with ErrNotHeld: the hold now held is a later one, which the context
// never carried. (Do ran the commands under that later hold: a stale
// write after another owner's.)
func TestDoWithADetachedContextOfAnEndedHold(t *testing.T) {
	raw := redistest.Shared(t).Client(t)
	for _, end := range []string{"unlocked", "lost"} {
		t.Run(end, func(t *testing.T) {
			c, other := sharedClient(t), sharedClient(t)
			name := redistest.LockName(t)
			mu := c.Mutex(name)
			owner := sharedOwner(t, c, name)
			first, err := mu.Lock(owner)
			require.NoError(t, err)
			detached := context.WithoutCancel(first)
			want := rlock.ErrNotHeld
			if end == "unlocked" {
				require.NoError(t, mu.Unlock(first))
			} else {
				want = rlock.ErrLockLost
				forced, err := other.Mutex(name).ForceUnlock(t.Context())
				require.NoError(t, err)
				require.True(t, forced)
				ol, err := other.Mutex(name).Lock(t.Context())
				require.NoError(t, err)
				_, err = other.Mutex(name).Do(ol, raw.B().Set().Key(mu.Key("x")).Value("other").Build())
				require.NoError(t, err)
				require.NoError(t, other.Mutex(name).Unlock(ol))
			}
			later, err := mu.Lock(owner)
			require.NoError(t, err)
			_, err = mu.Do(detached, raw.B().Set().Key(mu.Key("x")).Value("stale").Build())
			assert.ErrorIs(t, err, want)
			assert.ErrorIs(t, mu.Unlock(detached), rlock.ErrNotHeld, "Unlock leaves the later hold as it is")
			x, err := raw.Do(t.Context(), raw.B().Get().Key(mu.Key("x")).Build()).ToString()
			if end == "unlocked" {
				assert.True(t, rueidis.IsRedisNil(err), "nothing written: %q %v", x, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, "other", x, "the other owner's write stands")
			}
			require.NoError(t, mu.Unlock(later))
		})
	}
}
