package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// Readers share an RWMutex, a writer has it alone, and a writer that
// takes the read lock beside the write lock keeps reading after Unlock.
func ExampleRWMutex() {
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
	rw := locks.RWMutex("catalog")

	// Two owners read at once.
	a, err := rw.RLock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	b, err := rw.RLock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	readers, _ := rw.ReadHolders(a)
	fmt.Println("readers:", readers)
	_, ok, _ := rw.TryLock(context.Background(), 0, 0)
	fmt.Println("a writer gets in while they read:", ok)
	rw.RUnlock(a)
	rw.RUnlock(b)

	// A writer downgrades: write, then read beside, then stop writing.
	w, err := rw.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	r, err := rw.RLock(w)
	if err != nil {
		log.Fatal(err)
	}
	rw.Unlock(w)
	writing, _ := rw.IsWriteLocked(r)
	fmt.Println("still writing:", writing, "- still reading:", r.Err() == nil)
	rw.RUnlock(r)

	// A reader asking for the write lock would wait for itself.
	r, _ = rw.RLock(context.Background())
	_, err = rw.Lock(r)
	fmt.Println(errors.Is(err, rlock.ErrUpgrade))
	rw.RUnlock(r)
	// Output:
	// readers: 2
	// a writer gets in while they read: false
	// still writing: false - still reading: true
	// true
}
