package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// A permit can travel: a front end takes one when it queues a job, and
// the worker that finishes the job, in another process, gives it back by
// its id. So no more jobs are in flight than there are permits, whichever
// process ends them; a permit whose worker died comes back when its lease
// runs out. Here the two processes are two Clients.
func ExampleSemaphore_AcquirePermit() {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{exampleRedis()}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	ctx := context.Background()

	// The front end.
	front, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer front.Close()
	jobs := front.Semaphore("render-jobs")
	if _, err := jobs.TrySetPermits(ctx, 2); err != nil {
		log.Fatal(err)
	}
	id, err := jobs.AcquirePermit(ctx, time.Minute) // waits for a permit
	if err != nil {
		log.Fatal(err)
	}
	free, _ := jobs.Available(ctx)
	fmt.Println("job queued with its permit; permits free:", free)
	// ... the job goes to a queue, with id in it ...

	// The worker, in another process.
	worker, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer worker.Close()
	mine := worker.Semaphore("render-jobs")
	if err := mine.ExtendPermit(ctx, id, 2*time.Minute); err != nil { // a long job
		log.Fatal(err) // rlock.ErrNotHeld: its lease ran out, the job must stop
	}
	// ... render ...
	if err := mine.ReleasePermit(ctx, id); err != nil {
		log.Fatal(err)
	}
	free, _ = mine.Available(ctx)
	fmt.Println("job done; permits free:", free)
	if err := mine.ReleasePermit(ctx, id); errors.Is(err, rlock.ErrNotHeld) {
		fmt.Println("a permit is given back once")
	}
	// Output:
	// job queued with its permit; permits free: 1
	// job done; permits free: 2
	// a permit is given back once
}
