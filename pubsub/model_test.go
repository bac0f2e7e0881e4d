package pubsub

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoLostWakeUpModel drives the Subscriber as a semaphore does,
// with an in-process semaphore as the resource: each release returns a
// permit and publishes one message. Waiters subscribe, try, and sleep on
// Wake alone (no timer: any lost wake-up strands a waiter forever), some
// give up at random (Done(false)), some keep a taken permit a while. The
// promise under test: a message published after Subscribe returns wakes a
// waiter, and a waiter that leaves without the resource hands its wake-up
// on; so no waiter sleeps while a permit is free.
func TestNoLostWakeUpModel(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) { runWakeModel(t, e, 0) })
}

// TestNoLostWakeUpModelUnderDrops is the model while the
// Subscriber's connections are killed every 150 ms.
func TestNoLostWakeUpModelUnderDrops(t *testing.T) {
	forEachMode(t, true, func(t *testing.T, e *env) { runWakeModel(t, e, 150*time.Millisecond) })
}

func runWakeModel(t *testing.T, e *env, killEvery time.Duration) {
	{
		ch := channelName(t, "unlock")
		const permits = 2
		var mu sync.Mutex
		free := permits
		var sleeping atomic.Int64
		tryTake := func() bool {
			mu.Lock()
			defer mu.Unlock()
			if free > 0 {
				free--
				return true
			}
			return false
		}
		release := func() {
			mu.Lock()
			free++
			mu.Unlock()
			msg := "unlocked"
			if rand.IntN(2) == 0 {
				msg = Addressed + envID // a wake-up addressed to this Subscriber
			}
			cmd := func() rueidis.Completed {
				if e.sharded {
					return e.admin.B().Spublish().Channel(ch).Message(msg).Build()
				}
				return e.admin.B().Publish().Channel(ch).Message(msg).Build()
			}
			for e.admin.Do(context.Background(), cmd()).Error() != nil { // a killed link: publish again
				time.Sleep(time.Millisecond)
			}
		}
		ctx, stop := context.WithTimeout(t.Context(), 3*time.Second)
		defer stop()
		var wg sync.WaitGroup
		var stranded atomic.Int64
		if killEvery > 0 {
			wg.Go(func() {
				tick := time.NewTicker(killEvery)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					for _, typ := range []string{"normal", "pubsub"} {
						_ = e.admin.Do(context.Background(), e.admin.B().Arbitrary("CLIENT", "KILL", "TYPE", typ, "SKIPME", "yes").Build()).Error()
					}
				}
			})
		}
		for i := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(i), 7))
				for ctx.Err() == nil {
					w, err := e.subs.Subscribe(t.Context(), ch)
					if !assert.NoError(t, err) {
						return
					}
					giveUp := time.After(time.Duration(r.IntN(20)) * time.Millisecond)
					if r.IntN(3) != 0 {
						giveUp = nil // this one waits until it gets a permit
					}
					got := false
				loop:
					for {
						if got = tryTake(); got {
							break
						}
						sleeping.Add(1)
						select {
						case <-w.Wake():
							sleeping.Add(-1)
						case <-giveUp:
							sleeping.Add(-1)
							break loop
						case <-time.After(2 * time.Second):
							sleeping.Add(-1)
							mu.Lock()
							f := free
							mu.Unlock()
							if f > 0 {
								stranded.Add(1)
							}
							// keep waiting: the check above records a waiter that
							// slept 2 s beside a free permit
						}
					}
					w.Done(got)
					if got {
						time.Sleep(time.Duration(r.IntN(2)) * time.Millisecond)
						release()
					}
				}
			})
		}
		<-ctx.Done()
		waitDone := make(chan struct{})
		go func() { wg.Wait(); close(waitDone) }()
		select {
		case <-waitDone:
		case <-time.After(wakeWithin):
			mu.Lock()
			f := free
			mu.Unlock()
			require.Failf(t, "waiters stranded", "%d waiters still sleeping with %d permits free", sleeping.Load(), f)
		}
		assert.Zero(t, stranded.Load(), "a waiter slept 2 s beside a free permit")
		mu.Lock()
		assert.Equal(t, permits, free)
		mu.Unlock()
	}
}

// TestWaiterAfterClose: every Waiter method is safe after Close
// (nothing panics, nothing wakes, Done reports false), Subscribe fails
// with ErrClosed, and no goroutine or timer of the Subscriber fires after
// it: a WakeAfter between Close and Done is disarmed by Done.
func TestWaiterAfterClose(t *testing.T) {
	forEachMode(t, false, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		a, b := e.subscribe(t, ch), e.subscribe(t, ch)
		e.publishMessage(t, ch, Addressed+"nobody note")
		require.NoError(t, e.subs.Close())
		for _, w := range []*Waiter{a, b} {
			_, ok := <-w.Wake()
			assert.False(t, ok, "Wake is closed")
			w.Poke()
			w.WakeAfter(time.Millisecond)
			w.WakeAfter(-time.Second)
			_, has := w.Note()
			assert.False(t, has)
			w.WakeAfter(time.Hour)
			assert.False(t, w.Done(false))
			assert.False(t, w.Done(true))
		}
		_, err := e.subs.Subscribe(t.Context(), ch)
		require.ErrorIs(t, err, ErrClosed)
		assert.Zero(t, e.subs.Channels())
		assert.Zero(t, e.subs.wakeups.Len(), "a closed Subscriber's clock holds no wake-up")
		time.Sleep(20 * time.Millisecond)
	})
}

// TestResubscribeDelayStaysShortAfterManyDrops: each drop of the
// subscribing connection is made good, and the waiter woken, as fast after
// the twentieth drop as after the first. (rueidis resubscribes inside one
// Receive call, whose retry delay it never resets: after some twenty
// drops, each later one left the channel unsubscribed for a second.)
func TestResubscribeDelayStaysShortAfterManyDrops(t *testing.T) {
	forEachMode(t, true, func(t *testing.T, e *env) {
		ch := channelName(t, "unlock")
		w := e.subscribe(t, ch)
		var worst time.Duration
		for i := range 24 {
			ids := e.subscribedClients(t)
			require.Len(t, ids, 1)
			start := time.Now()
			require.NoError(t, e.admin.Do(t.Context(), e.admin.B().ClientKill().Id(ids[0]).Build()).Error())
			requireWoken(t, w, "drop %d", i)
			took := time.Since(start)
			worst = max(worst, took)
			if i < 3 || i > 20 {
				t.Logf("drop %d: woken after %v", i, took)
			}
		}
		assert.Less(t, worst, 300*time.Millisecond, "the resubscription after a drop took %v", worst)
	})
}
