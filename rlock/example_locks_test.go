package rlock_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// Locks shows an operator every lock of a deployment, of every kind: who
// holds it, who waits, what a semaphore has left.
func ExampleClient_Locks() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{exampleRedis()}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	locks, err := rlock.New(rc, rlock.WithKeyPrefix("example-locks:"))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	// Some locks held: a Mutex, an RWMutex read by two owners, a permit.
	ctx := context.Background()
	mu := locks.Mutex("reports")
	held, err := mu.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock(held)
	config := locks.RWMutex("config")
	for range 2 {
		read, err := config.RLock(ctx) // a new owner each time: ctx carries none
		if err != nil {
			log.Fatal(err)
		}
		defer config.RUnlock(read)
	}
	uploads := locks.Semaphore("uploads")
	if _, err := uploads.TrySetPermits(ctx, 3); err != nil {
		log.Fatal(err)
	}
	permit, err := uploads.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer uploads.Release(permit)

	// The operator's view: every lock under the Client's prefix.
	var states []rlock.LockState
	for st, err := range locks.Locks(ctx, "*") {
		if err != nil {
			log.Fatal(err)
		}
		states = append(states, st)
	}
	// SCAN's order is Redis's: sort for a stable table.
	slices.SortFunc(states, func(a, b rlock.LockState) int { return strings.Compare(a.Name, b.Name) })
	for _, st := range states {
		fmt.Printf("%-8s %-10s holders: %d", st.Name, st.Kind, len(st.Holders))
		if st.Kind == rlock.KindSemaphore {
			fmt.Printf(", %d of %d permits free", st.Available, st.Permits)
		}
		fmt.Println()
	}
	// Output:
	// config   rwmutex    holders: 2
	// reports  mutex      holders: 1
	// uploads  semaphore  holders: 1, 2 of 3 permits free
}
