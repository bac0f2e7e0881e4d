// Package rlock provides reentrant locks that Go processes share through
// Redis, in the manner of Redisson's RLock, on the rueidis client; and, on
// the same engine, a read-write lock, a fair lock, a semaphore with leased
// permits and a count-down latch.
//
// # Quick start
//
// Make one rueidis client and one rlock Client per process and Redis
// deployment, take a Mutex by name, and Lock it. The context that Lock
// returns carries the hold: pass it on, and to Unlock.
//
//	package main
//
//	import (
//		"context"
//		"errors"
//		"log"
//
//		"github.com/redis/rueidis"
//		"github.com/rlock/rlock/rlock"
//	)
//
//	func main() {
//		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer rc.Close()
//
//		locks, err := rlock.New(rc)
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer locks.Close() // stops renewals; releases no lock, leaves rc open
//
//		if err := report(context.Background(), locks.Mutex("reports:daily")); err != nil {
//			log.Fatal(err)
//		}
//	}
//
//	// report runs while it holds mu, and stops if the lock is lost.
//	func report(ctx context.Context, mu *rlock.Mutex) error {
//		ctx, err := mu.Lock(ctx) // waits; ctx now carries this owner
//		if err != nil {
//			return err
//		}
//		defer mu.Unlock(ctx) // works even when ctx is done by then
//
//		for page := 1; page <= 3; page++ {
//			if err := context.Cause(ctx); err != nil {
//				if errors.Is(err, rlock.ErrLockLost) {
//					log.Printf("lock lost before page %d: %v", page, err)
//				}
//				return err
//			}
//			log.Printf("page %d", page) // work that needs the lock, given ctx
//		}
//		return nil
//	}
//
// Close the rlock Client before the rueidis client (the defers above run in
// that order). The Examples run this flow, and each of the features below,
// against a real Redis.
//
// # Ownership travels in the context
//
// Go has no thread identity, so rlock does not guess one: the context that
// Lock returns carries the owner. Every call made with that context, or with
// a context derived from it, acts for the same owner. Shadowing ctx, as
// above, is the idiom that keeps it so.
//
//   - Lock again with the lock context and you re-enter: the hold count goes
//     up (HoldCount reports it), and each Lock needs its own Unlock. Only the
//     last Unlock frees the lock.
//   - Lock twice with a context that carries no owner, such as the parent
//     you started from, and you are two owners: the second call waits for
//     the first to Unlock, as a second thread would in Java, even in the same
//     goroutine (where it deadlocks until ctx ends).
//   - Goroutines that share a lock context share the owner, as code on one
//     Java thread would: a Lock from any of them re-enters instead of waiting.
//     The lock keeps other owners out, not the goroutines of one owner:
//     goroutines that must exclude each other each Lock with a context that
//     carries no owner, and so become owners of their own.
//   - One context chain carries one owner for every lock taken down it, on
//     every Client, including the parts of a MultiLock.
//
// A Mutex names the lock, not a hold: handles from Client.Mutex are cheap,
// safe for concurrent use, and two handles of the same name (with the same
// key prefix, on the same Redis) are the same lock in every process.
//
// # Leases, the watchdog, and losing a lock
//
// A lock in Redis has a lease: if its holder vanishes, it frees itself when
// the lease runs out. Lock, and TryLock with no lease, hand the lock to the
// Client's watchdog, which renews the lease (DefaultLeaseTime, 30 s, or
// WithLeaseTime) every third of it until the final Unlock. LockFor, and
// TryLock with a lease, set a fixed lease that nothing renews: Redis marks
// such a hold, and refuses a renewal that reaches it late, sent for an
// earlier hold of the same owner.
//
// It is NOT safe to assume that a lock is held until Unlock. A Redis that
// restarted empty, a partition or pause longer than the lease, or a fixed
// lease running out can end a hold at any moment. The context that Lock
// returns is done, with a cause (read it with context.Cause) that
// errors.Is matches to ErrLockLost, when the lock may no longer be held:
//
//   - a renewal found the lock gone, or held by another owner; a Lock of
//     the same owner found it gone: Redis refused its re-entry, or found
//     the lock free (a re-entry takes nothing, and that Lock then takes the
//     lock afresh: a new hold, under a new fencing token); or an Unlock
//     found levels of the hold missing;
//   - no renewal succeeded before the local deadline: the lease counted from
//     when the last acquire or renewal request was sent, less an allowance
//     for clock drift (1% of the lease plus 2 ms), so the context is done no
//     later than the moment another owner could take the lock;
//   - a fixed lease ran out (at the same local deadline);
//   - this Client's ForceUnlock deleted it (holders on other Clients learn
//     of it at their next renewal), an Unlock failed, or the Client was
//     closed.
//
// IsLocked, HoldCount and RemainingLease read a lock's state in Redis.
// ForceUnlock deletes a lock whoever holds it: a tool for operators, not for
// holders.
//
// The context is also done after the final Unlock (cause context.Canceled),
// and when the context it was derived from is done. A done context does not
// release the lock: always Unlock, which runs even with a done context,
// within the retry timeout (WithRetryTimeout). Unlock returns ErrNotHeld
// when the lock was lost meanwhile, and leaves another owner's hold alone.
// A hold owns the levels taken through it: once it has ended, an Unlock
// with its context never leaves a level of the owner's later hold, and a
// later Lock does not take over what it left in Redis.
//
// That promise holds while Redis keeps what it acknowledged. A Redis that
// restarts empty (no persistence) sooner than one lease after it stopped, or
// a failover to a replica that had not received the lock, frees the lock at
// once, and its holder learns of it only at the next renewal, up to a third
// of the lease later. Restart Redis no sooner than one lease after it
// stopped, or run it with appendfsync always; against failovers, use
// WithReplicaAck. Where a stale holder must never write, use fencing tokens.
//
// Taking and releasing a lock are each one atomic script in Redis, one round
// trip. A request whose reply was lost (a timeout, a broken connection) is
// resent within the retry timeout, and is never applied twice: a resent
// Unlock does not count down twice. A request the caller gave up on (its
// context ended while the reply was outstanding) is settled before the call
// returns, and never takes effect later. Calls of one owner on one lock take
// turns within a Client, so concurrent re-entries from goroutines that share
// a lock context are applied one at a time; a re-entry never shortens the
// lease that a live hold relies on, and Lock never returns a context that is
// already done. Nothing is written to Redis per request: an uncontended
// Lock+Unlock leaves only the lock's fencing counter behind.
//
// # Fencing tokens
//
// Every hold has a fencing token, from Mutex.FencingToken(ctx): it is the
// same across re-entries and strictly greater for each later holder of the
// lock. It keeps increasing across a Redis restart that lost the counter,
// which is then re-seeded from the Redis server's clock (unless that clock
// went back). Send it
// with every write made under the lock, and have the store refuse a token
// lower than the highest it has seen: a holder whose lock was lost, however
// late its write arrives, is turned away.
//
// For data kept in Redis beside the lock, Mutex.Do (and FairMutex.Do,
// RWMutex.Do) needs no token: it runs commands in the same script as the
// check that ctx's owner holds the lock, so a holder that lost it writes
// nothing, however late it runs; Key names keys in the lock's slot.
//
// # Waiting: TryLock and LockFor
//
// Lock and LockFor wait until the lock is free, or ctx is done; they then
// return an error that wraps ctx.Err(), so errors.Is(err, context.Canceled)
// and errors.Is(err, context.DeadlineExceeded) hold. TryLock(ctx, wait,
// lease) waits for at most wait (0: a single attempt) and returns ctx
// unchanged, false and a nil error when it did not get the lock in time. Its
// lease, if positive, is fixed as in LockFor (at least MinLease); zero or
// less hands the lock to the watchdog as Lock does.
//
// A waiter does not poll. It subscribes to the lock's unlock channel, tries
// the lock, and sleeps until an Unlock wakes it, or until the holder's
// lease would run out (an expiring lock publishes nothing). One Unlock
// wakes one waiter in the whole deployment: Redis records which Clients
// wait, and the Unlock wakes the longest-waiting waiter of the Client that
// has waited longest, by a message on that Client's own inbox beside the
// channel, which no other process receives. (A Client whose process died
// while it waited swallows that wake-up; the next waiter then asks when the
// lease it was told of runs out. A Client closed while it waits passes it
// on.)
//
// An Unlock that frees a Mutex some owner of the same Client waits for
// hands it to that waiter in the release script itself: the waiter holds
// it under a new fencing token, with the lease it asked for, without an
// acquire of its own (one round trip per handoff). Once another Client's
// waiter is refused, the Client hands over at most eight times more: the
// release after that frees the lock and wakes that Client, though an
// owner that asks first may still take it (a Mutex is not fair; a
// FairMutex is, first come first served). A waiter that arrives while its
// Client holds the lock that way parks without asking Redis. Once an
// owner takes the lock, its other goroutines parked on it are woken to
// re-enter at once: no release would wake them while it holds.
//
// # RWMutex
//
// Client.RWMutex is a reentrant read-write lock, Redisson's RReadWriteLock:
// many owners hold the read lock (RLock, TryRLock, RUnlock) at once, the
// write lock (Lock, TryLock, Unlock) excludes every other owner. The write
// holder may take the read lock and keep it after Unlock (a downgrade); a
// reader asking for the write lock gets ErrUpgrade. Neither side starves: a
// waiting writer holds new readers back, and a write Unlock admits the
// readers waiting for it ahead of the next writer. Every hold, read or
// write, has a lease of its own that the watchdog renews, so a dead reader
// stops holding within its lease while others read on. A read hold's
// fencing token is the latest write's.
//
// # FairMutex: first come, first served
//
// Client.FairMutex returns a lock with Mutex's methods whose waiters get
// it in the order their first waiting acquire reached Redis, across
// processes and Clients. The waiters queue in Redis beside the lock; the
// Unlock that frees it hands it, in the same script, to the longest
// waiting live waiter. When that waiter is one of the releasing Client's,
// the Unlock's reply carries the grant to it, and nothing is published;
// otherwise the script publishes a message addressed to that waiter. The
// waiter's Lock then returns without asking Redis again. A queued waiter's
// entry has a lease of its own that the watchdog renews with the holds, so
// a waiter whose process died drops out within one lease; one handed the
// lock after it died holds it for what was left of that lease. A waiter
// that gives up leaves the queue, and hands on a lock handed to it
// meanwhile. Re-entry never queues; TryLock with wait 0 never queues and
// takes a free lock only when nobody waits.
//
// # MultiLock and RedLock
//
// A MultiLock is one lock over several Mutexes, normally one per
// independent Redis master, each from its own Client, all with the same
// name. NewMultiLock is held when every Mutex is; NewRedLock when a
// majority (len/2+1) were taken and the lease left after taking them, less
// the clock-drift allowance, is positive (the Redlock validity rule). A
// MultiLock has Lock, LockFor, TryLock and Unlock with the meanings above;
// its context carries one owner for every node.
//
// The nodes are asked in order, each within a timeout small against the
// lease. A try that falls short gives back every part it took, and those
// whose reply was lost, and is retried after a random pause while the wait
// lasts. With the watchdog every part is renewed; a node that lost its part
// (restarted empty) is asked again, and the context is done, with a cause
// that matches ErrLockLost, once fewer parts than needed are held. Unlock
// asks every node where the hold has a part, even when some fail, and
// returns the failures joined; after such a loss it still releases the
// parts left, and returns ErrNotHeld.
//
// # Semaphore and CountDownLatch
//
// Client.Semaphore is a counting semaphore whose permits are held like
// locks, on the same engine: Acquire and TryAcquire return a context that
// carries the permit and ends with ErrLockLost if it is lost; without a
// lease the watchdog renews the permit, and the permits of a process that
// died come back when their lease runs out (Redisson's RSemaphore leaks
// them). One context may carry several permits of one semaphore: each
// Acquire with it takes one more, each Release gives one back. Permits are
// set once with TrySetPermits, or changed with AddPermits; a Redis that
// loses its data loses them too (set them again). Waiters sleep on pub/sub
// and wake when permits come back.
//
// A permit can also travel, as Redisson's RPermitExpirableSemaphore's do:
// AcquirePermit takes one for a lease and returns its id, which another
// process gives back with ReleasePermit or keeps with ExtendPermit, on any
// Client. Travelling and context-bound permits draw from the same
// permits and wake each other's waiters; a travelling permit is nobody's
// hold, so nothing renews it and Close does not end it.
//
// Client.CountDownLatch is Java's CountDownLatch across processes:
// TrySetCount, CountDown (exactly once per call, also under resends and
// give-ups) and Await, which sleeps on pub/sub until the count is 0. A latch
// Redis has lost reads as 0: Await returns at once.
//
// # One vocabulary
//
// Every primitive that is held answers to the same verbs, with the same
// signatures and meanings as Mutex's; a verb is left out only where the
// primitive has nothing it could mean:
//
//	verb            Mutex  FairMutex  RWMutex      Semaphore     CountDownLatch  MultiLock
//	Lock            yes    yes        yes + RLock  Acquire       -  (1)          yes
//	LockFor         yes    yes        yes + RLock… AcquireFor    -  (1)          yes
//	TryLock         yes    yes        yes + TryR…  TryAcquire    -  (1)          yes
//	Unlock          yes    yes        yes + RUnl…  Release       -  (1)          yes
//	ForceUnlock     yes    yes        yes          ForceRelease  -  (1)          -  (3)
//	IsLocked        yes    yes        yes (2)      -  Available  -  Count        -  (3)
//	HoldCount       yes    yes        yes + RHold… yes (permits) -  (1)          -  (3)
//	RemainingLease  yes    yes        yes          -  (4)        -  (1)          -  (3)
//	FencingToken    yes    yes        yes          -  (4)        -  (1)          -  (3)
//	Inspect         yes    yes        yes          yes           yes             -  (3)
//	Name            yes    yes        yes          yes           yes             -  (3)
//	Do, Key         yes    yes        yes (5)      -  (4)        -  (1)          -  (3)
//
// (1) A latch is not held: it has TrySetCount, CountDown, Count and Await.
// (2) RWMutex also has IsWriteLocked and ReadHolders. (3) A MultiLock is
// its parts: it has no name or state of its own; ask each Mutex. (4) A
// permit is one of many, not a lock: it has no fencing token, and each
// permit's lease is its own (Inspect shows them); a permit excludes
// nobody, so it guards no write (Do). A Semaphore's permits may also
// travel: AcquirePermit, TryAcquirePermit, ExtendPermit, ReleasePermit.
// (5) Under the write hold; under a read hold alone, read-only commands.
// Counts are int
// everywhere; a fencing token is an int64. Every bad argument, options
// included, matches ErrInvalidArgument.
//
// # One name, one resource per kind
//
// The kind is part of every key: Mutex("x"), RWMutex("x"), FairMutex("x"),
// Semaphore("x") and CountDownLatch("x") are five independent resources
// that share a Cluster slot and nothing else. None excludes, waits for or
// wakes another; within a kind, every rule above holds. A GroupedMutex is a
// Mutex of its group, independent of a Mutex of the same name outside it.
// (Locks taken by an rlock older than this rule, whose RWMutex and
// FairMutex used the Mutex's keys, are invisible to it: upgrade the
// processes that use an RWMutex or FairMutex together, or let their holds
// end, at most one lease.)
//
// # Options
//
// New takes functional options:
//
//   - WithLeaseTime(d): the lease of watchdog locks, renewed every d/3.
//     Default DefaultLeaseTime (30 s); at least MinLease (10 ms).
//   - WithKeyPrefix(p): the prefix of every key and channel. Default
//     DefaultKeyPrefix ("rlock:"); it must not contain braces.
//   - WithLogger(l): a *slog.Logger for failed renewals and lost locks.
//     Default: nothing is logged.
//   - WithRetryTimeout(d): how long a request whose reply was lost is
//     resent, and how long Unlock runs when its context is already done.
//     Default DefaultRetryTimeout (5 s).
//   - WithReplicaAck(n, timeout): every acquire waits until n replicas
//     acknowledged it (Redis WAIT), as Redisson's checkLockSyncedSlaves
//     does; otherwise the lock is given back and the call fails with
//     ErrNotReplicated. Default off (n 0).
//   - WithHooks(h): report acquires, releases, holds (and why each
//     ended), watchdog rounds and replica acknowledgements to h; see
//     Observability. Default none.
//
// Options that are out of range make New fail; New never panics, nor does
// any method on bad input.
//
// # Observability
//
// Hooks, set with WithHooks, is called by the engine that every primitive
// runs on, so each primitive reports without code of its own: acquires
// (outcome, wait, attempts, wake-ups, re-entry, fencing token), Unlock
// calls, holds from their first level to their end with an EndReason,
// watchdog rounds, replica acknowledgements. This package imports no
// telemetry library; package rlockotel turns the hooks into OpenTelemetry
// spans and metrics. Without hooks nothing is reported and nothing
// allocated. Hooks that also implement DoHooks see every Do (guarded
// writes): its outcome, its commands, the hold's token.
//
// Client.Inspect and each primitive's Inspect read a lock's state in Redis
// for operators: its kind, holders and their counts, leases and tokens,
// waiters, permits or count, the subscriptions waiting on it; Client.Locks
// walks every lock of a deployment (SCAN, on every Cluster master). They
// are diagnostics, not synchronisation: never decide from them whether a
// lock may be taken or used.
//
// # Errors
//
// Errors wrap these sentinels with %w (a Mutex's errors also name the lock);
// match them with errors.Is, not ==:
//
//   - ErrNotHeld: Unlock (or MultiLock.Unlock) by an owner that does not
//     hold the lock: it never took it, already released it, or lost it.
//   - ErrLockLost: the cause (context.Cause) of a lock context that ended
//     because the lock may no longer be held.
//   - ErrClosed: any call after Client.Close, and a call that was waiting
//     when Close ran; together with ErrLockLost, the cause of the contexts
//     of the holds Close ended.
//   - ErrNotReplicated: with WithReplicaAck, an acquire that too few
//     replicas acknowledged in time; the lock was given back.
//   - ErrNilClient: New with a nil rueidis client, or a call on a Mutex
//     that did not come from a Client made by New.
//   - ErrNilContext: a method given a nil context.
//   - ErrInvalidName: an empty lock name, or one that cannot name keys,
//     reported by the Mutex's first call.
//   - ErrInvalidDuration: a negative wait, a lease below MinLease, or an
//     option's duration out of range.
//   - ErrInvalidArgument: an option or MultiLock that cannot work: a nil
//     logger or hooks, a negative replica count, a MultiLock of no or nil mutexes or
//     with one lock twice, a RedLock with two mutexes of one Client.
//   - ErrResultsLost: a Do whose commands ran once but whose reply was
//     lost. A Do refused as lost matches ErrLockLost; one with commands it
//     cannot run (see Mutex.Do), ErrInvalidArgument; one that too few
//     replicas acknowledged, ErrNotReplicated (the commands ran).
//   - ErrOutcomeUnknown: an acquire (of any kind), an AcquirePermit, a
//     CountDown, or a write that runs once (ForceUnlock, TrySetPermits,
//     AddPermits, ExtendPermit, TrySetCount) whose reply was lost and
//     whose settling call got no answer either: it may still apply (a
//     hold until its lease ends, a count or a deletion for good). Any
//     other error of those calls means it did not apply, and will not; a
//     write that runs once and applied while its caller's ctx ended
//     returns its result and no error.
//
// A call whose context ended wraps ctx.Err(); a Redis failure wraps the
// rueidis error (a refused acquire at maxmemory wraps Redis's OOM reply).
//
// # Redis
//
// rlock needs Redis 7 or later (its scripts declare flags, which Redis 7
// brought), in any
// deployment a rueidis client speaks to: standalone, Sentinel or Cluster.
//
//   - Cluster: all keys of one lock hash to one slot, chosen by the lock's
//     name (a hash tag made from the whole name: braces in a name are never
//     its hash tag, and distinct names never share a key), so that every
//     script touches one slot. Client.GroupedMutex puts the locks of one
//     group in one slot, on purpose. Unlock
//     notifications use sharded pub/sub (SPUBLISH, SSUBSCRIBE) on that
//     slot, and the watchdog batches renewals per slot. Slot migrations are
//     followed.
//   - maxmemory: at the limit, with the noeviction policy, a new acquire
//     fails at once with Redis's OOM error, while Unlock and renewals still
//     work, so held locks are kept and released. An eviction policy
//     (allkeys-* or volatile-*: lock keys have an expiry) may evict a held
//     lock, which its holder then sees as lost; use noeviction.
//   - Replication is asynchronous: see WithReplicaAck.
//
// # For maintainers: where things live
//
// The package is one engine and thin primitives on it. Each file holds one
// concept: client.go (the Client, New, Close), lock.go (a named resource,
// the lock engine's handle, and the read-only queries), kind.go (what a primitive supplies),
// owner.go (ownership in the context), turn.go (an owner's turn on a lock),
// request.go (the request protocol: sequence numbers, resends, WAIT),
// acquire.go (taking a hold), release.go (the one way back to a lower
// count), hold.go (a hold's life, its lock contexts, its deadline and its events), wait.go
// (waiting on the unlock channel), hooks.go (the Hooks API and the traces
// of calls), errors.go (the sentinels and every cause a hold ends with).
// The primitives: mutex.go with park.go (a Mutex's and a FairMutex's
// waiters park in their Client's lot) and handoff.go (a release hands the
// lock to one of them),
// group.go, rwmutex.go, rwmutex_state.go,
// fairmutex.go with fairqueue.go, semaphore.go with permit.go, latch.go,
// multilock.go with multihold.go; inspect.go reads a lock for operators,
// locks.go walks them all; do.go runs a holder's commands under the
// ownership check (lua/do.lua).
//
// How a Lock travels (uncontended). acquire.go is the spine, its functions
// in the order they run; each other file is entered once, at its step:
//
//	mutex.go     Mutex.Lock → Mutex.acquire
//	acquire.go   begin
//	lock.go        resource.check: a usable handle, a Client not closed
//	owner.go       withOwner: the context's owner, or a new one; field
//	hooks.go       traceAcquire (and acquireTrace.end at the last step)
//	acquire.go   attempt
//	turn.go        Client.take: the owner's turn (and Client.give after)
//	acquire.go   ask → acquireCallIn (a pooled argument array)
//	request.go     Client.exchangeInto → exchangeMessage: stamp seq and
//	               superseded, EVALSHA; the reply read into a stack array
//	acquire.go   parseGrant → keep
//	hold.go        newHold (HoldStart), hold.record → watchdog.Add
//	acquire.go   bound → hold.bind: the lock context; end
//
// When the first attempt finds the lock held (or the Client knows it
// contended and skips it), a Mutex's acquire goes on in park.go
// (waitParked: pubsub.Subscriber.SubscribeAs, then attempt and sleep
// parked in the Client's lot, where a release of the same Client may hand
// it the lock: handoff.go), FairMutex's in fairqueue.go (waitInQueue,
// parked in the lot too, in the order of the queue in Redis), and
// the other kinds' in wait.go (waitOnChannel: attempt again on each
// wake-up).
//
// How an Unlock travels (release.go is its spine):
//
//	mutex.go     Mutex.Unlock → lock.unlockHandingOver (and FairMutex.Unlock)
//	handoff.go   handOverLevel (traceRelease in hooks.go)
//	release.go   unlockTurn: turn.go Client.take (and Client.give after)
//	handoff.go   heir: park.go parkingLot.claim (nobody waits: nil)
//	release.go   release → releaseCallIn (with an heir: handoff.go
//	             releaseTo, then bequeath the grant to the heir)
//	request.go     Client.exchangeInto
//	release.go   recordRelease → parseRelease; unlocked
//	hold.go        hold.finish at 0: lifetime.end, watchdog.Remove, HoldEnd
//
// How a watchdog round travels: watchdog/watchdog.go run wakes at a tick
// → round.go renew: wheel.drain (wheel.go) takes the holds due, batch cuts
// them per Cluster slot, send.go sends renew.lua per batch, tally reads the
// replies, notify calls each hold's Renewed (hold.renewed: a later local
// deadline) or Lost (hold.lost → hold.finish with ErrLockLost).
//
// # For maintainers: adding a primitive
//
//  1. Write its scripts in lua/: an acquire and a release that take the
//     request layout (acquireCall, releaseCall), --@include their helpers,
//     and answer with the codes of lua/codes.lua that the decoders read
//     (parseGrant, parseRelease); declare them in lua/scripts.go.
//  2. Give it a key set in internal/keys if it must not share the lock's.
//  3. In its own file, declare its kind (the one registration):
//     var fooKind = &kind{name: "foo", acquire: lua.FooAcquire,
//     release: lua.FooRelease}.
//  4. Its type embeds (or holds) a lock made by newLock(c, name, fooKind,
//     keys.CheckName(name), keys.NewRef(c.prefix(), name)); its verbs call the
//     engine: lock.acquire, lock.unlock, lock.forceUnlock, the queries.
//  5. If its waiters wait differently, write the wait beside it (as
//     fairqueue.go does) and an acquire that calls begin, the wait, and end.
//  6. Tests beside it; the kind's hostile suite; a row in README's table.
//
// The engine never branches on a kind, and nothing a kind supplies is a
// function value or an interface: a call on one primitive reaches no other
// primitive's code. Keep it so in the static call graph too: a goroutine
// or a callback is a method (go m.settle(...)), not a closure, wherever it
// is in the module, because a call through any func() value (every
// context's cancel) may, for the graph, run every closure of that type.
// (golang.org/x/tools/go/callgraph/cha draws that graph.)
package rlock
