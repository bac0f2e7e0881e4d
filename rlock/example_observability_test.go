package rlock_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// lossCounter is a Hooks that counts the holds that ended other than by
// their release, by reason. Embedding NopHooks leaves the other events
// unobserved. (Package rlockotel reports every event to OpenTelemetry.)
type lossCounter struct {
	rlock.NopHooks
	mu   sync.Mutex
	lost map[rlock.EndReason]int
}

func (c *lossCounter) HoldEnd(e rlock.HoldEnd) {
	if e.Reason == rlock.EndReleased {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost[e.Reason]++
}

// Hooks observe every lock of a Client; here, the holds lost.
func ExampleWithHooks() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{exampleRedis()}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	losses := &lossCounter{lost: map[rlock.EndReason]int{}}
	locks, err := rlock.New(rc, rlock.WithHooks(losses))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	mu := locks.Mutex("reports:hooks")
	ctx, err := mu.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := mu.ForceUnlock(context.Background()); err != nil { // an operator steps in
		log.Fatal(err)
	}
	fmt.Println("lock context done:", ctx.Err() != nil)
	losses.mu.Lock()
	fmt.Println("lost:", losses.lost)
	losses.mu.Unlock()
	// Output:
	// lock context done: true
	// lost: map[force_unlocked:1]
}

// Inspect shows an operator who holds a lock, how often, and who waits.
func ExampleClient_Inspect() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{exampleRedis()}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	locks, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	mu := locks.Mutex("reports:inspect")
	ctx, err := mu.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock(ctx)
	ctx, err = mu.Lock(ctx) // re-entered
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock(ctx)

	st, err := locks.Inspect(context.Background(), "reports:inspect")
	if err != nil {
		log.Fatal(err)
	}
	token, _ := mu.FencingToken(ctx)
	fmt.Println("holders:", len(st.Holders), "held by this Client:", st.Holders[0].Local, "count:", st.Holders[0].Count)
	fmt.Println("token matches:", st.FencingToken == token, "leased:", st.Lease > 0, "waiting Clients:", st.Subscribers)
	// Output:
	// holders: 1 held by this Client: true count: 2
	// token matches: true leased: true waiting Clients: 0
}
