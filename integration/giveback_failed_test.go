package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFailedGiveBackGrantToCancelledCaller: a Lock whose grant
// arrives just as its caller's context is cancelled returns an error, so
// nobody will ever Unlock that lock. When the give-back of that level
// fails (a network blip at that moment), the lock must still come free
// at the latest a lease or so after the network heals: nothing may keep
// renewing a lock that no caller holds.
func TestFailedGiveBackGrantToCancelledCaller(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	hash := lockKeys(name).Hash

	var cancelOnGrant atomic.Pointer[context.CancelFunc]
	var releaseDown atomic.Bool
	hc := &hookClient{Client: node.Client(t), hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		switch scriptOn(cmd, hash) {
		case acquireScript:
			res := run()
			if !ran(res) {
				return res
			}
			if c := cancelOnGrant.Swap(nil); c != nil {
				// The grant's reply arrives as the caller gives up, and the
				// link drops right after.
				releaseDown.Store(true)
				(*c)()
			}
			return res
		case releaseScript:
			if releaseDown.Load() {
				return lostReply()
			}
		}
		return run()
	}}
	const lease = 600 * time.Millisecond
	c := newRlock(t, hc, rlock.WithLeaseTime(lease), rlock.WithRetryTimeout(200*time.Millisecond))
	mu := c.Mutex(name)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancelOnGrant.Store(&cancel)
	_, err := mu.Lock(ctx)
	require.Error(t, err, "the caller gave up as the grant came: Lock fails")
	releaseDown.Store(false) // the link heals

	// Nobody holds the lock: it must be free once its lease has run out.
	deadline := time.Now().Add(4 * lease)
	for time.Now().Before(deadline) {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pttl, _ := raw.Do(t.Context(), raw.B().Pttl().Key(hash).Build()).AsInt64()
	assert.Fail(t, "the lock is still held, renewed for nobody",
		"Lock returned %v, yet %s still exists %v after (pttl %dms): the watchdog keeps renewing a hold no caller has", err, hash, 4*lease, pttl)
}

// TestFailedGiveBackMultiLockShortTry: a MultiLock try that
// falls short gives back the parts it took; when that give-back fails (a
// blip), the part must still come free within a lease or so after the
// network heals, as TryLock's doc promises ("no node keeps a part of
// it"). Nothing may keep renewing a part no caller holds.
func TestFailedGiveBackMultiLockShortTry(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	nameA, nameB := redistest.LockName(t)+"a", redistest.LockName(t)+"b"
	hashA := lockKeys(nameA).Hash

	var releaseDown atomic.Bool
	hc := &hookClient{Client: node.Client(t), hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		if scriptOn(cmd, hashA) == releaseScript && releaseDown.Load() {
			return lostReply()
		}
		return run()
	}}
	const lease = 600 * time.Millisecond
	c := newRlock(t, hc, rlock.WithLeaseTime(lease), rlock.WithRetryTimeout(200*time.Millisecond))
	other := newRlock(t, node.Client(t), rlock.WithLeaseTime(lease))
	bctx, err := other.Mutex(nameB).Lock(t.Context())
	require.NoError(t, err)
	defer other.Mutex(nameB).Unlock(bctx)

	ml := rlock.NewMultiLock(c.Mutex(nameA), c.Mutex(nameB))
	releaseDown.Store(true)
	_, ok, err := ml.TryLock(t.Context(), 0, 0)
	releaseDown.Store(false) // the link heals
	require.NoError(t, err)
	require.False(t, ok, "B is held by another Client")

	deadline := time.Now().Add(4 * lease)
	for time.Now().Before(deadline) {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(hashA).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	pttl, _ := raw.Do(t.Context(), raw.B().Pttl().Key(hashA).Build()).AsInt64()
	assert.Fail(t, "part A is still held, renewed for nobody",
		"TryLock fell short, yet %s still exists %v after (pttl %dms)", hashA, 4*lease, pttl)
}

// TestFailedGiveBackReentryToCancelledCaller: a re-entry whose grant
// arrives as its caller gives up returns an error, so its level is not the
// caller's to Unlock. When giving that level back fails (a blip), the
// owner's own Unlock of the level it does hold must still free the lock:
// the level nobody holds must not keep the lock held, and renewed, for
// ever.
func TestFailedGiveBackReentryToCancelledCaller(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	hash := lockKeys(name).Hash

	var cancelOnGrant atomic.Pointer[context.CancelFunc]
	var releaseDown atomic.Bool
	hc := &hookClient{Client: node.Client(t), hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		switch scriptOn(cmd, hash) {
		case acquireScript:
			res := run()
			if !ran(res) {
				return res
			}
			if c := cancelOnGrant.Swap(nil); c != nil {
				releaseDown.Store(true)
				(*c)()
			}
			return res
		case releaseScript:
			if releaseDown.Load() {
				return lostReply()
			}
		}
		return run()
	}}
	const lease = 600 * time.Millisecond
	c := newRlock(t, hc, rlock.WithLeaseTime(lease), rlock.WithRetryTimeout(200*time.Millisecond))
	mu := c.Mutex(name)
	lctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	inner, cancel := context.WithCancel(lctx)
	defer cancel()
	cancelOnGrant.Store(&cancel)
	_, err = mu.Lock(inner)
	require.Error(t, err, "the caller gave up as the re-entry was granted: Lock fails")
	releaseDown.Store(false) // the link heals

	require.NoError(t, mu.Unlock(lctx), "the owner leaves the one level it holds")
	deadline := time.Now().Add(4 * lease)
	for time.Now().Before(deadline) {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	count, _ := raw.Do(t.Context(), raw.B().Hgetall().Key(hash).Build()).AsStrMap()
	assert.Fail(t, "the lock is still held after the owner's only Unlock",
		"%s = %v %v after the owner's final Unlock (lctx err %v)", hash, count, 4*lease, lctx.Err())
}

// waitSignal is a Hooks that tells when an acquire begins to wait.
type waitSignal struct {
	rlock.NopHooks
	waiting chan struct{}
}

func (w *waitSignal) AcquireWait(context.Context, rlock.LockRef) {
	select {
	case w.waiting <- struct{}{}:
	default:
	}
}

// TestFailedGiveBackHandOverToGivenUpWaiter: an Unlock hands the lock to
// a parked waiter of the same Client just as that waiter's caller gives up
// (its context is cancelled: a TryLock's wait, a request timeout). The
// waiter's Lock fails, so it gives the lock back; when that give-back
// fails (a blip), the lock must still come free within a lease or so once
// the network heals. Nothing may keep renewing the handed lock that nobody
// holds, and other waiters would wait for it for ever.
func TestFailedGiveBackHandOverToGivenUpWaiter(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	hash := lockKeys(name).Hash

	var cancelOnRelease atomic.Pointer[context.CancelFunc]
	var releaseDown atomic.Bool
	hc := &hookClient{Client: node.Client(t), hook: func(_ context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult {
		if scriptOn(cmd, hash) != releaseScript {
			return run()
		}
		if releaseDown.Load() {
			return lostReply()
		}
		res := run()
		if ran(res) {
			if c := cancelOnRelease.Swap(nil); c != nil {
				// The hand-over is done in Redis; the heir's caller gives
				// up, and the link drops right after.
				releaseDown.Store(true)
				(*c)()
			}
		}
		return res
	}}
	const lease = 600 * time.Millisecond
	sig := &waitSignal{waiting: make(chan struct{}, 1)}
	c := newRlock(t, hc, rlock.WithLeaseTime(lease), rlock.WithRetryTimeout(200*time.Millisecond), rlock.WithHooks(sig))
	mu := c.Mutex(name)
	hctx, err := mu.Lock(t.Context())
	require.NoError(t, err)

	wctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lockErr := make(chan error, 1)
	go func() {
		_, err := mu.Lock(wctx)
		lockErr <- err
	}()
	select {
	case <-sig.waiting:
	case <-time.After(redistest.Patience):
		t.Fatal("the waiter never waited")
	}
	time.Sleep(100 * time.Millisecond) // it asks, is refused, and parks

	cancelOnRelease.Store(&cancel)
	require.NoError(t, mu.Unlock(hctx))
	select {
	case err = <-lockErr:
	case <-time.After(redistest.Patience):
		t.Fatal("the waiter's Lock never returned")
	}
	releaseDown.Store(false) // the link heals
	require.Error(t, err, "the waiter gave up: its Lock fails")

	deadline := time.Now().Add(4 * lease)
	for time.Now().Before(deadline) {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	fields, _ := raw.Do(t.Context(), raw.B().Hgetall().Key(hash).Build()).AsStrMap()
	assert.Fail(t, "the handed lock is still held, renewed for nobody",
		"the waiter's Lock returned %v, yet %s = %v %v after", err, hash, fields, 4*lease)
}
