package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// exampleRedis returns the address of the Redis the examples run against,
// which the test harness starts (and empties) for them. In your code this is
// the address of your Redis, such as "127.0.0.1:6379".
func exampleRedis() string { return redistest.ExampleAddrs(1)[0] }

// exampleRedisMasters returns the addresses of n independent Redis servers,
// started by the test harness. In your code these are your masters.
func exampleRedisMasters(n int) []string { return redistest.ExampleAddrs(n) }

// The whole flow: a rueidis client, one rlock Client on it, a lock taken,
// work done while watching the lock context, the lock released, and
// everything closed.
func Example() {
	addr := exampleRedis()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()

	// One rlock Client per process and Redis deployment. Its Close stops
	// the watchdog and the subscriber; it does not close rc.
	locks, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	mu := locks.Mutex("orders:42")
	// Lock waits for the lock. The context it returns carries the owner:
	// pass it on, and to Unlock. The watchdog renews the lock until Unlock.
	ctx, err := mu.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", mu.Name())

	// The lock can be lost before Unlock (Redis restarted empty, a
	// partition longer than the lease): ctx is then done, with a cause that
	// wraps rlock.ErrLockLost. Check it between steps, and pass ctx to calls
	// that should stop when the lock is lost.
	for _, step := range []string{"reserve stock", "charge card", "ship"} {
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), rlock.ErrLockLost) {
				log.Printf("lock lost before %q: %v", step, context.Cause(ctx))
			}
			break
		}
		fmt.Println(step)
	}

	// Unlock returns rlock.ErrNotHeld if the lock was lost meanwhile.
	if err := mu.Unlock(ctx); err != nil {
		log.Print(err)
	}
	// The final Unlock ends the lock context too.
	fmt.Println("lock context done:", ctx.Err() != nil)

	// Output:
	// locked orders:42
	// reserve stock
	// charge card
	// ship
	// lock context done: true
}

// Locking again with the lock context re-enters: the hold count goes up,
// and each Lock needs its own Unlock. A context that carries no owner, such
// as the parent the first Lock started from, is another owner.
func ExampleMutex_Lock() {
	addr := exampleRedis()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	locks, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	mu := locks.Mutex("inventory")
	parent := context.Background()

	// Shadowing ctx is the idiom: from here on, ctx names this owner.
	ctx, err := mu.Lock(parent)
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock(ctx)

	// restock may be called with or without the lock held; with ctx, it
	// re-enters instead of waiting for itself.
	restock := func(ctx context.Context) error {
		ctx, err := mu.Lock(ctx)
		if err != nil {
			return err
		}
		defer mu.Unlock(ctx)
		n, err := mu.HoldCount(ctx)
		if err != nil {
			return err
		}
		fmt.Println("hold count in restock:", n)
		return nil
	}
	if err := restock(ctx); err != nil {
		log.Fatal(err)
	}
	n, err := mu.HoldCount(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hold count after restock:", n)

	// The parent context carries no owner: Lock(parent) would wait for the
	// lock like another process, even in this goroutine. TryLock with no
	// wait shows it without blocking.
	_, ok, err := mu.TryLock(parent, 0, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("another owner got it:", ok)

	// Output:
	// hold count in restock: 2
	// hold count after restock: 1
	// another owner got it: false
}

// TryLock gives up after a wait (0: a single attempt) and reports whether it
// got the lock; a positive lease is fixed, and nothing renews it.
func ExampleMutex_TryLock() {
	addr := exampleRedis()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	locks, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	mu := locks.Mutex("report:daily")

	// One attempt, with a fixed lease of one minute: the lock context is
	// done, with cause rlock.ErrLockLost, when the lease runs out.
	ctx, ok, err := mu.TryLock(context.Background(), 0, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first owner got it:", ok)

	// Another owner waits up to 100 ms, then gives up: no error, ok false,
	// and its context comes back unchanged.
	_, ok, err = mu.TryLock(context.Background(), 100*time.Millisecond, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second owner got it within 100ms:", ok)

	// A waiter is woken by the holder's Unlock; it does not poll. Here the
	// first owner unlocks 50 ms into a wait of up to 10 s.
	unlocked := make(chan error, 1)
	time.AfterFunc(50*time.Millisecond, func() { unlocked <- mu.Unlock(ctx) })
	ctx2, ok, err := mu.TryLock(context.Background(), 10*time.Second, 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := <-unlocked; err != nil {
		log.Fatal(err)
	}
	fmt.Println("third owner got it after the Unlock:", ok)
	if err := mu.Unlock(ctx2); err != nil {
		log.Fatal(err)
	}

	// Output:
	// first owner got it: true
	// second owner got it within 100ms: false
	// third owner got it after the Unlock: true
}

// A fencing token comes with every hold and increases from one holder to the
// next. A store that refuses a token lower than one it has seen turns away a
// holder whose lock was lost, however late its write arrives.
func ExampleMutex_FencingToken() {
	addr := exampleRedis()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	locks, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	mu := locks.Mutex("ledger")

	// The store: it remembers the highest token it has accepted.
	var highest int64
	write := func(who string, token int64) {
		if token < highest {
			fmt.Println(who, "refused: stale token")
			return
		}
		highest = token
		fmt.Println(who, "written")
	}

	a, err := mu.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	tokenA, _ := mu.FencingToken(a)
	write("A", tokenA)
	if err := mu.Unlock(a); err != nil { // or A's lock is lost: a pause, a partition
		log.Fatal(err)
	}

	b, err := mu.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock(b)
	tokenB, _ := mu.FencingToken(b)
	fmt.Println("B's token is higher:", tokenB > tokenA)
	write("B", tokenB)

	// A write that A sent while it held the lock arrives late.
	write("A", tokenA)

	// Output:
	// A written
	// B's token is higher: true
	// B written
	// A refused: stale token
}

// A RedLock is held when a majority of independent Redis masters granted it
// within the lease; NewMultiLock would need all of them. Each Mutex comes
// from an rlock Client on its own master, and they share the lock's name.
func ExampleNewRedLock() {
	addrs := exampleRedisMasters(3)

	var mutexes []*rlock.Mutex
	for _, addr := range addrs {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		defer rc.Close()
		locks, err := rlock.New(rc)
		if err != nil {
			log.Fatal(err)
		}
		defer locks.Close()
		mutexes = append(mutexes, locks.Mutex("jobs:nightly"))
	}

	rl := rlock.NewRedLock(mutexes...)
	ctx, err := rl.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	held := 0
	for _, mu := range mutexes {
		if n, err := mu.HoldCount(ctx); err == nil && n > 0 {
			held++
		}
	}
	fmt.Println("held on a majority:", held >= len(mutexes)/2+1)

	// Unlock releases every master, even when some fail.
	if err := rl.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("lock context done:", ctx.Err() != nil)

	// Output:
	// held on a majority: true
	// lock context done: true
}

// Close ends the context of every lock the Client holds, with a cause that
// matches both rlock.ErrLockLost and rlock.ErrClosed: nothing renews those
// locks any more. Close does not release them (Unlock first); they expire
// after their lease. Later calls fail with rlock.ErrClosed.
func ExampleClient_Close() {
	addr := exampleRedis()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	locks, err := rlock.New(rc)
	if err != nil {
		log.Fatal(err)
	}

	mu := locks.Mutex("cache:warmup")
	ctx, err := mu.Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}

	if err := locks.Close(); err != nil {
		log.Fatal(err)
	}
	cause := context.Cause(ctx)
	fmt.Println("lock context done:", ctx.Err() != nil)
	fmt.Println("cause is ErrLockLost:", errors.Is(cause, rlock.ErrLockLost))
	fmt.Println("cause is ErrClosed:", errors.Is(cause, rlock.ErrClosed))

	_, err = mu.Lock(context.Background())
	fmt.Println("Lock after Close:", errors.Is(err, rlock.ErrClosed))

	// Output:
	// lock context done: true
	// cause is ErrLockLost: true
	// cause is ErrClosed: true
	// Lock after Close: true
}
