package rlock_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// A semaphore bounds how many processes do something at once. A permit is
// held like a lock: its context ends with ErrLockLost if it is lost, the
// watchdog renews it, and the permits of a process that dies come back
// after their lease.
func ExampleSemaphore() {
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

	exports := locks.Semaphore("exports")
	// Set once, by whoever comes first; the others' calls change nothing.
	if _, err := exports.TrySetPermits(context.Background(), 2); err != nil {
		log.Fatal(err)
	}
	ctx, err := exports.Acquire(context.Background()) // waits for a permit
	if err != nil {
		log.Fatal(err)
	}
	free, _ := exports.Available(ctx)
	fmt.Println("exporting; permits free:", free)
	if err := exports.Release(ctx); err != nil {
		log.Print(err) // rlock.ErrNotHeld if the permit was lost meanwhile
	}
	free, _ = exports.Available(context.Background())
	fmt.Println("done; permits free:", free)
	// Output:
	// exporting; permits free: 1
	// done; permits free: 2
}

// A count-down latch lets processes wait until others have each done their
// part: Await returns once CountDown was called as many times as set.
func ExampleCountDownLatch() {
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

	ready := locks.CountDownLatch("shards-loaded")
	if _, err := ready.TrySetCount(context.Background(), 3); err != nil {
		log.Fatal(err)
	}
	var loaders sync.WaitGroup
	for range 3 { // in real use, three other processes
		loaders.Go(func() {
			if err := ready.CountDown(context.Background()); err != nil {
				log.Print(err)
			}
		})
	}
	if err := ready.Await(context.Background()); err != nil { // sleeps; no polling
		log.Fatal(err)
	}
	fmt.Println("all shards loaded")
	loaders.Wait()
	// Output:
	// all shards loaded
}
