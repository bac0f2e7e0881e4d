package watchdog_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/watchdog"
)

func TestNewRejectsBadInput(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	for name, tc := range map[string]struct {
		lease time.Duration
		nilRC bool
	}{
		"nil client":      {lease: time.Second, nilRC: true},
		"zero lease":      {lease: 0},
		"negative lease":  {lease: -time.Second},
		"lease under 1ms": {lease: 500 * time.Microsecond},
	} {
		t.Run(name, func(t *testing.T) {
			c := rc
			if tc.nilRC {
				c = nil
			}
			w, err := watchdog.New(c, watchdog.Config{Lease: tc.lease})
			assert.Error(t, err)
			assert.Nil(t, w)
		})
	}
}

func TestAddRejectsNilAndSecondAdd(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	w := start(t, rc, time.Minute, nil)
	assert.Error(t, w.Add(nil), "nil hold")

	h := &watchdog.Entry{Key: "watchdog:{" + t.Name() + "}", Field: "f"}
	require.NoError(t, w.Add(h))
	assert.Error(t, w.Add(h), "a hold already registered")
	w.Remove(h)
	assert.Error(t, w.Add(h), "a removed hold")
	assert.Zero(t, w.Len())
}

func TestCloseDropsHoldsAndRefusesAdd(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	const lease = 600 * time.Millisecond
	rec := newRecorder()
	holds := rec.holds(t, 20)
	lock(t, rc, time.Minute, holds...)
	w, err := watchdog.New(rc, watchdog.Config{Lease: lease})
	require.NoError(t, err)
	addAll(t, w, holds...)
	require.Eventually(t, func() bool { return rec.renewals() >= len(holds) },
		5*time.Second, 10*time.Millisecond, "every hold renewed once")

	require.NoError(t, w.Close())
	after := rec.renewals()
	assert.Zero(t, w.Len(), "holds left after Close")
	assert.ErrorIs(t, w.Add(&watchdog.Entry{Key: "k", Field: "f"}), watchdog.ErrClosed)
	assert.NoError(t, w.Close(), "second Close")
	w.Remove(holds[0]) // a no-op after Close

	time.Sleep(2 * lease / 3) // the thing under test: two periods pass without a callback
	assert.Equal(t, after, rec.renewals(), "Renewed called after Close returned")
}

func TestRemoveIsSynchronous(t *testing.T) {
	// A Redis of its own, so that its command counts are this test's, and
	// a slow link to it, so that a round is in flight a good part of the
	// time.
	node := redistest.New(t, redistest.Config{})
	admin := node.Client(t)
	proxy := node.Proxy(t)
	rc, err := rueidis.NewClient(redistest.ClientOption(proxy.Addr()))
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	const (
		lease = 900 * time.Millisecond
		delay = 30 * time.Millisecond // each way
		n     = 200
	)
	proxy.Delay(delay)

	var (
		removed [n]atomic.Bool
		late    atomic.Int64 // callbacks that started after Remove returned
		renewed atomic.Int64
	)
	holds := make([]*watchdog.Entry, n)
	for i := range holds {
		holds[i] = &watchdog.Entry{
			Key:   fmt.Sprintf("watchdog:{%s}:%d", t.Name(), i),
			Field: "owner",
			Holder: funcs{
				renewed: func(time.Time) {
					renewed.Add(1)
					if removed[i].Load() {
						late.Add(1)
					}
				},
				lost: func(*watchdog.Entry) { late.Add(1) }, // no key is deleted: never lost
			},
		}
	}
	lock(t, admin, time.Minute, holds...)
	w := start(t, rc, lease, nil)
	addAll(t, w, holds...)
	require.Eventually(t, func() bool { return renewed.Load() >= 2*n },
		5*time.Second, 5*time.Millisecond, "every hold renewed twice")

	// Remove the holds from several goroutines over one and a half periods, so
	// that many removals meet a round in flight.
	var (
		wg     sync.WaitGroup
		waited atomic.Int64 // removals that took as long as a one-way trip
	)
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < n; i += 4 {
				began := time.Now()
				w.Remove(holds[i])
				removed[i].Store(true)
				if time.Since(began) >= delay {
					waited.Add(1)
				}
				time.Sleep(lease / 100) // removals spread over time, to meet rounds in flight
			}
		})
	}
	wg.Wait()
	assert.Zero(t, w.Len())
	t.Logf("%d of %d removals waited for a round in flight", waited.Load(), n)
	assert.Positive(t, waited.Load(), "no removal met a round in flight")

	before := renewCalls(t, admin)
	time.Sleep(2 * lease / 3 * 2) // the thing under test: two periods pass without a renewal
	assert.Equal(t, before, renewCalls(t, admin), "renew calls after every hold was removed")
	assert.Zero(t, late.Load(), "callbacks that started after Remove returned")
}

func TestRemoveFromCallbacks(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	const lease = 600 * time.Millisecond
	w := start(t, rc, lease, nil)

	// selfRenewed removes itself from Renewed, lost removes itself from
	// Lost (as rlock's hold does), and other removes bystander from Renewed.
	var (
		selfDone, lostDone, otherDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
		bystanderCalls                atomic.Int64
	)
	key := "watchdog:{" + t.Name() + "}:"
	bystander := &watchdog.Entry{Key: key + "bystander", Field: "f", Holder: funcs{renewed: func(time.Time) { bystanderCalls.Add(1) }}}
	var selfRenewed, lost, other *watchdog.Entry
	selfRenewed = &watchdog.Entry{Key: key + "self", Field: "f", Holder: funcs{renewed: func(time.Time) {
		w.Remove(selfRenewed)
		close(selfDone)
	}}}
	lost = &watchdog.Entry{Key: key + "lost", Field: "f", Holder: funcs{lost: func(*watchdog.Entry) {
		w.Remove(lost)
		close(lostDone)
	}}}
	other = &watchdog.Entry{Key: key + "other", Field: "f", Holder: funcs{renewed: func(time.Time) {
		w.Remove(bystander)
		w.Remove(other)
		close(otherDone)
	}}}
	lock(t, rc, time.Minute, selfRenewed, other, bystander) // lost's key does not exist
	addAll(t, w, bystander, selfRenewed, lost, other)

	for name, done := range map[string]chan struct{}{"Renewed removing itself": selfDone, "Lost removing itself": lostDone, "Renewed removing another": otherDone} {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not return: deadlock", name)
		}
	}
	assert.Zero(t, w.Len(), "holds left")
	calls := bystanderCalls.Load()
	time.Sleep(2 * lease / 3) // the thing under test: two periods pass without a callback
	assert.Equal(t, calls, bystanderCalls.Load(), "bystander renewed after its removal")
}
