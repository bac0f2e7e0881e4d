package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// An account balance that only the lock's holder moves. Do runs the
// commands in the same Redis script as the check that the caller still
// holds the lock, so a holder that was paused past its lease, and lost the
// lock to another process meanwhile, writes nothing: the hole that a lock
// alone leaves open. The balances live in keys that Key names in the
// lock's slot, so this works on a Cluster too.
func ExampleMutex_Do() {
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

	accounts := locks.Mutex("accounts")
	alice, bob := accounts.Key("alice"), accounts.Key("bob")

	ctx, err := accounts.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// Open the accounts, then move 30 from alice to bob: each Do is
	// atomic, and runs only while this owner holds the lock.
	if _, err := accounts.Do(ctx,
		rc.B().Set().Key(alice).Value("100").Build(),
		rc.B().Set().Key(bob).Value("0").Build(),
	); err != nil {
		log.Fatal(err)
	}
	res, err := accounts.Do(ctx,
		rc.B().Decrby().Key(alice).Decrement(30).Build(),
		rc.B().Incrby().Key(bob).Increment(30).Build(),
	)
	if err != nil {
		log.Fatal(err) // errors.Is(err, rlock.ErrLockLost): nothing moved
	}
	for _, r := range res {
		if err := r.Error(); err != nil { // one command failed; the others ran
			log.Fatal(err)
		}
	}
	a, _ := res[0].AsInt64()
	b, _ := res[1].AsInt64()
	fmt.Println("alice", a, "bob", b)

	if err := accounts.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// A holder that no longer holds the lock moves nothing.
	_, err = accounts.Do(ctx, rc.B().Decrby().Key(alice).Decrement(30).Build())
	fmt.Println("after Unlock, not held:", errors.Is(err, rlock.ErrNotHeld))
	// Output:
	// alice 70 bob 30
	// after Unlock, not held: true
}
