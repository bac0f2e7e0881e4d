package rlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// faultLease is the lease of the fault tests' locks: short, so that a
// hold Redis forgot is found lost quickly, long enough for a pause.
const faultLease = time.Second

// faultHold is one hold of the relay: its lock context, and when that
// context was done (unix ns; 0 until then).
type faultHold struct {
	ctx  context.Context
	done atomic.Int64
}

// overlap is a hold that began while an earlier hold's lock context was
// not done yet: at began, beside earlier.
type overlap struct {
	earlier *faultHold
	began   time.Time
}

// faultRelay has goroutines of several Clients pass one Mutex around
// while the test does something to Redis: each Client's goroutines hand
// the lock over among themselves, and yield it to the others' waiters.
type faultRelay struct {
	mu       sync.Mutex
	holders  map[*int]*faultHold // the holds in progress, by goroutine
	last     int64               // the latest hold's fencing token
	overlaps []overlap
	falls    []int64 // tokens that came lower than the one before
	after    atomic.Pointer[time.Time]
	late     []atomic.Int32 // holds after mark, by Client
}

// run has perClient goroutines of each of clients take and release the
// Mutex called name until stop is done, each hold lasting hold; a Lock
// or Unlock that fails is tried again. It returns once they have all
// stopped.
func (r *faultRelay) run(t *testing.T, clients []*rlock.Client, name string, perClient int, hold time.Duration, stop context.Context) func() {
	r.holders = map[*int]*faultHold{}
	r.late = make([]atomic.Int32, len(clients))
	var wg sync.WaitGroup
	for ci, c := range clients {
		m := c.Mutex(name)
		for range perClient {
			wg.Go(func() {
				me := new(int)
				for stop.Err() == nil {
					ctx, cancel := context.WithTimeout(stop, redistest.Patience)
					lctx, err := m.Lock(ctx)
					cancel()
					if err != nil {
						time.Sleep(time.Millisecond) // Redis is down: ask again a little later
						continue
					}
					r.began(me, m, lctx)
					if at := r.after.Load(); at != nil && time.Now().After(*at) {
						r.late[ci].Add(1)
					}
					time.Sleep(hold) // the workload: a hold of this length
					r.ended(me)
					if err := m.Unlock(lctx); err != nil {
						assert.True(t, errors.Is(err, rlock.ErrLockLost) || errors.Is(err, rlock.ErrNotHeld) || context.Cause(lctx) != nil,
							"an Unlock fails only for a lock lost or Redis down: %v", err)
					}
				}
			})
		}
	}
	return wg.Wait
}

// began records the hold of goroutine me under lctx, and any hold still
// in progress whose lock context is not done.
func (r *faultRelay) began(me *int, m *rlock.Mutex, lctx context.Context) {
	token, _ := m.FencingToken(lctx)
	h := &faultHold{ctx: lctx}
	context.AfterFunc(lctx, func() { h.done.Store(time.Now().UnixNano()) })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, other := range r.holders {
		if other.ctx.Err() == nil {
			r.overlaps = append(r.overlaps, overlap{earlier: other, began: time.Now()})
		}
	}
	if token <= r.last {
		r.falls = append(r.falls, token)
	}
	r.last = token
	r.holders[me] = h
}

// ended records that goroutine me's hold is over.
func (r *faultRelay) ended(me *int) {
	r.mu.Lock()
	delete(r.holders, me)
	r.mu.Unlock()
}

// mark starts counting holds from now, by Client.
func (r *faultRelay) mark() {
	now := time.Now()
	r.after.Store(&now)
}

// faultClients returns n rlock Clients on node, each on a rueidis client
// of its own, with faultLease and a short retry timeout.
func faultClients(t *testing.T, node *redistest.Node, n int) []*rlock.Client {
	cs := make([]*rlock.Client, n)
	for i := range cs {
		cs[i] = newRlock(t, node.Client(t), rlock.WithLeaseTime(faultLease), rlock.WithRetryTimeout(faultLease))
	}
	return cs
}

// relayThrough runs a faultRelay of two Clients, four goroutines each,
// on a Redis of its own; fault does something to that Redis 300 ms in,
// and the relay runs on for after. Whatever the fault, every Client holds
// the lock again after it, and the last Unlock frees the lock.
func relayThrough(t *testing.T, fault func(ctx context.Context, node *redistest.Node) error, after time.Duration) *faultRelay {
	node := redistest.New(t, redistest.Config{})
	if !node.Controllable() {
		t.Skip("REDIS_ADDR is set: the test stops the Redis it runs")
	}
	name := redistest.LockName(t)
	clients := faultClients(t, node, 2)
	stop, cancel := context.WithCancel(t.Context())
	r := &faultRelay{}
	wait := r.run(t, clients, name, 4, time.Millisecond, stop)
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, fault(t.Context(), node))
	r.mark()
	time.Sleep(after)
	cancel()
	wait()

	for i := range r.late {
		t.Logf("Client %d: %d holds after the fault", i, r.late[i].Load())
		assert.Positive(t, r.late[i].Load(), "Client %d held the lock after the fault", i)
	}
	locked, err := clients[0].Mutex(name).IsLocked(t.Context())
	require.NoError(t, err)
	assert.False(t, locked, "the last Unlock freed the lock")
	return r
}

// TestHandOverRedisPaused: Redis stops (SIGSTOP) for a third of a lease
// while two Clients' goroutines pass a lock around, handing it over within
// each Client. Nothing is lost: no hold begins beside another whose lock
// context is live, and tokens rise with every hold.
func TestHandOverRedisPaused(t *testing.T) {
	r := relayThrough(t, func(ctx context.Context, node *redistest.Node) error {
		if err := node.Pause(ctx); err != nil {
			return err
		}
		time.Sleep(faultLease / 3)
		return node.Resume(ctx)
	}, 1500*time.Millisecond)
	assert.Empty(t, r.overlaps, "holds beside a live hold")
	assert.Empty(t, r.falls, "tokens lower than the hold's before")
}

// TestHandOverRedisKilled: Redis is killed and restarted empty while two
// Clients' goroutines pass a lock around, handing it over within each
// Client. Redis forgot every hold, so a new hold may begin beside one
// whose holder has not yet been told; each such holder is told (its lock
// context done with ErrLockLost) within a lease. Tokens still rise: the
// counter restarts from the clock.
func TestHandOverRedisKilled(t *testing.T) {
	r := relayThrough(t, func(ctx context.Context, node *redistest.Node) error {
		if err := node.Kill(ctx); err != nil {
			return err
		}
		return node.Restart(ctx)
	}, 3*faultLease)
	for _, o := range r.overlaps {
		done := o.earlier.done.Load()
		require.NotZero(t, done, "every hold ended by the end of the run")
		told := time.Unix(0, done).Sub(o.began)
		assert.Less(t, told, faultLease, "a holder Redis forgot is told within a lease of another hold beginning")
		assert.ErrorIs(t, context.Cause(o.earlier.ctx), rlock.ErrLockLost, "a holder Redis forgot is told it lost the lock")
	}
	t.Logf("holds begun beside a holder not yet told: %d", len(r.overlaps))
	assert.Empty(t, r.falls, "tokens lower than the hold's before")
}
