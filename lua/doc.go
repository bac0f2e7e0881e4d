// Package lua holds the Redis scripts of rlock's primitives (locks,
// read-write locks, fair locks, semaphores, count-down latches), ready to
// run through rueidis. This page is the maintainers' reference for what
// rlock keeps in Redis and for the request protocol the scripts serve.
//
// # Scripts
//
// Each script is a .lua file whose header comment names its KEYS, its ARGV
// and its reply; read it before calling the script. The files are embedded
// at build time and each is a *Script, wrapped once in a *rueidis.Lua:
// Script.Exec sends EVALSHA and falls back to EVAL when Redis answers
// NOSCRIPT (after a restart or SCRIPT FLUSH). Callers that pipeline a
// script with other commands (the replica-acknowledged acquire sends it
// with WAIT; the watchdog sends many renewals at once) build the commands
// with Script.EvalSHA and Script.Eval.
//
// Every script is atomic: no other command runs in Redis while it does.
// They open with a #!lua shebang, which needs Redis 7 or later, as does
// PEXPIRE ... GT, which they use. The release scripts (release,
// fair_release, rw_read_release, rw_write_release, semaphore_release,
// semaphore_permit_release), force_release, renew,
// semaphore_permit_extend, latch_countdown and void carry the allow-oom flag, so
// that locks can still be released and renewed, and latches counted down,
// when Redis is at maxmemory; the acquire
// scripts do not, so at maxmemory Redis refuses new holds cleanly, before
// they run. inspect, rw_state and semaphore_available carry no-writes
// (inspect also allow-stale: a replica cut off from its master still runs
// it). Key types
// are checked before anything is written, so an error leaves no partial
// write.
//
// # Which scripts may be resent
//
// Only idempotent scripts may be resent blindly. Renew is checked against
// the holder and only lengthens leases, Void changes nothing the second
// time, and RWState and SemaphoreAvailable read
// without writing: they are built retryable, and rueidis resends their
// Exec after a lost reply (a caller that builds their commands with
// EvalSHA decides itself: the watchdog does). Inspect is read-only and goes as EVALSHA_RO, which
// rueidis resends too. Every other script writes, and a blind resend could
// apply it twice (a release lowering a count twice is Redisson #4871; an
// AddPermits adding twice), or late (an extension from the time it
// runs): they are sent once, and only rlock's request protocol, below,
// sends an acquire, a release or a count-down again, as a new call that
// supersedes the lost one; the writes that belong to no hold are voided
// instead (once.lua).
//
// # Helpers and includes
//
// Code that several scripts share lives in helper files, which have no
// shebang and which Redis never runs alone:
//
//	codes.lua    the reply codes
//	lease.lua    nowMs (the Redis clock, in ms) and lengthen (PEXPIRE GT)
//	fence.lua    fence: records a give-up fence
//	token.lua    the fencing counter: nextToken, currentToken
//	hold.lua     a lock's hold: take, reenter, lower
//	client.lua   clientOf: the Client of an owner field
//	queue.lua    a fair lock's queue: enqueue, dequeue, head, giveTo, handOver
//	holders.lua  a semaphore's holders, with their own leases
//	rw.lua       a read-write lock's hash: prune, admit, acquiring, releasing
//
// A file names the helpers it uses with one line each at its top, right
// after a script's shebang or first in a helper:
//
//	#!lua flags=allow-oom
//	--@include codes.lua
//	--@include fence.lua
//	--@include hold.lua
//
// The loader (include.go) puts every helper a script needs, named by the
// script or by a helper it includes, once, after the shebang and before
// the script's own lines; a helper comes after the helpers it names, in
// the order named. So a script is one Lua chunk, and a local a helper
// defines is in scope below it. A missing file, a cycle, or an include
// below a file's first lines panics when the package is initialised;
// TestIncludesAreExact checks that each file names exactly the helpers
// whose names it uses, so no script gets a helper it does not name, itself
// or through a helper it names. Within the helpers it gets, the loader
// leaves out the functions the script does not call, itself or through
// a function it calls (prune.go): Lua makes a closure of every function
// a chunk defines each time it runs (the acquire and release scripts
// make 26 closures a Lock+Unlock, where they would make 44: about 2 µs of
// their 19 µs in Redis, by INFO commandstats on a quiet machine). A
// left-out function's lines stay as blank lines, so that line numbers
// still map.
//
// # Errors name the file and line
//
// An error Redis raises inside a script (a Lua error, or a command the
// script calls failing) names a line of the text Redis ran, such as
// "user_script:57", which is a line of the spliced text. Script.Exec
// rewrites it to the file and line it comes from, and names the script by
// its file beside its SHA1:
//
//	value is not an integer or out of range script: lua/renew.lua <sha1>, on @lua/lease.lua:15.
//
// Script.MapError does the same for the replies of commands built with
// EvalSHA and Eval. The mapped error is still a *rueidis.RedisError, so
// rueidis.IsRedisErr tells it from an error in transit as before. An error
// a script returns itself (redis.error_reply, such as a WRONGTYPE after a
// type check) names no line and is left as it is.
//
// # Reply codes
//
// The scripts of the request protocol (every acquire and release, and the
// latch's count-down) answer an array whose first element is a Code, one
// meaning per number across every script; codes.lua defines them for the
// scripts, under the same names in capitals (NOT_HELD is NotHeld), and a
// test keeps the two equal:
//
//	Refused    0  {Refused, pttl}          not taken; pttl bounds the wait (-1: nothing ends by itself)
//	Granted    1  {Granted, count, token}  taken or re-entered: count levels, fencing token (0 for a permit)
//	Stale      2  {Stale, 0}               a superseded copy: nothing was done
//	NotHeld    3  {NotHeld, 0}             a release by an owner that holds nothing
//	StillHeld  4  {StillHeld, count}       released down to count > 0 levels
//	Freed      5  {Freed, 0}               released down to 0: the owner holds nothing any more
//	Counted    6  {Counted, count}         the request counted the latch down; count is left
//	NotCounted 7  {NotCounted, count}      the request did not count
//	Ran        8  {Ran, results}           do.lua: the holder's commands ran; one result each
//	RanEarlier 9  {RanEarlier, 0}          do.lua: a call of the request whose reply was lost ran them
//	NotRun    10  {NotRun, 0}              do.lua, settling: no call of the request ran, none will
//	Handed    11  {Handed, token}          release.lua, fair_release.lua: freed and handed to a waiter of the releaser's Client
//
// Each script's header names the codes it answers. Every acquire script
// answers Granted, Refused or Stale, and every release script NotHeld,
// StillHeld, Freed or Stale; so one request protocol and one pair of
// decoders in package rlock serve them all.
//
// They also take one call layout, which rlock builds in one place
// (acquireCall, releaseCall) for every kind of lock:
//
//	acquire  KEYS  hash, token counter, fences, queue, unlock channel
//	         ARGV  F, seq, count, lease ms, superseded, fence life ms,
//	               waiting, publish command, watchdog lease ms, watched
//	release  KEYS  hash, unlock channel, fences, token counter, queue
//	         ARGV  F, seq, count, publish command, superseded, fence life ms
//
// A script reads what it needs and leaves the rest: only the fair lock's
// read the queue, the hand-over channel and the last three acquire
// arguments. Its header lists what it reads. (semaphore_permit_release,
// whose releaser is a Client, takes the release layout with a count-down's
// ARGV[3], a number reserved before the request, and the permit as
// ARGV[7].) do.lua (Mutex.Do) is a request of the protocol too, with a
// layout of its own (KEYS hash, fences; ARGV F, seq, first, n, superseded,
// fence life, then the commands), seq and superseded where every request
// has them; it answers Ran, RanEarlier, NotRun, NotHeld or Stale, and, like
// the latch's count-down, tells a request's calls from earlier ones by a
// number reserved before its first call. The other scripts (renew,
// force_release, inspect, rw_state, latch_set, semaphore_permits,
// semaphore_available, semaphore_permit_extend, void) answer plain numbers
// (booleans, counts) or values, as their headers say, never codes.
//
// The writes that belong to no owner's hold (force_release,
// semaphore_permits, semaphore_permit_extend, latch_set) run once per
// call (once.lua): each call keeps its answer under a key of its own, the
// resource's fences key, ':', C, '!' and a seq, for the fence life;
// void.lua settles a call whose reply never came, so that it never runs
// after and its answer, if it ran, is told.
//
// # Redis layout
//
// Every key of a primitive called N under the Client's prefix P (default
// "rlock:") starts with the base P{N'}, where N' is N with '%' written
// %25 and '}' written %7D, nothing else changed. All of them share the
// hash tag {N'}, so on a Cluster each script touches one slot, and a
// name's own braces are never its tag: two names never share a key. A
// grouped Mutex (Client.GroupedMutex(G, N)) has the base P{G'}/M, with G'
// encoded as N' is, and M being N with '%' written %25 and ':' written %3A,
// so that the locks of a group share G's slot and no key with any other
// lock (internal/keys builds every name). Below,
// F is an owner field, <clientID>:<ownerToken>, which names one owner of
// one Client; C is a Client's id.
//
// The kind is part of the key: a Mutex's keys are on the base itself, an
// RWMutex's on base:rw, a FairMutex's on base:fair, a Semaphore's on
// base:semaphore and a CountDownLatch's on base:latch, each laid out as
// below on its own base, so that the kinds of one name share a slot and
// nothing else. Below, P{N'} is the base of the kind in question.
//
// Mutex (acquire.lua, release.lua) and FairMutex (fair_*.lua):
//
//	P{N'}          hash    F -> hold count; F#seq -> the seq of F's latest call that applied;
//	                       F#fix -> 1 while F's lease is fixed, which no renewal lengthens;
//	                       waiters -> 1 while someone may wait, so that the release publishes.
//	                       The key's expiry is the lease. One owner at a time.
//	P{N'}:unlock   channel 'unlocked' from the release that frees a lock someone waits for,
//	                       and from force_release
//	P{N'}:unlock@C channel Client C's inbox (pubsub.Inbox): the messages addressed to C or
//	                       to its waiters: a Mutex's wake-up of C ('@<C>'), a fair lock's
//	                       hand-over to a waiter of C and its deadlines (below). Each
//	                       Client with waiters subscribes to its inbox with the channel
//	P{N'}:token    string  the fencing counter: INCR on every first acquire (and hand-over);
//	                       persistent; started from the server clock in µs whenever it is
//	                       missing, so that tokens keep growing across a restart that lost it
//	P{N'}:fence    hash    F -> the highest seq of F whose reply was lost; written only after
//	                       a lost reply, and it expires
//	P{N'}:fence:C!<seq>  string  the answer of a call of force_release ('void': voided before
//	                       it came; once.lua); it expires
//	P{N'}:queue    zset    a Mutex's waiting Clients: C scored by the Redis time in µs its
//	                       first waiter was refused while subscribed; the release that
//	                       frees a marked lock pops the first and publishes '@<C>' on its
//	                       inbox ('unlocked', to every Client, when none is recorded);
//	                       it expires a watchdog lease after the holder's lease (waiting.lua)
//	P{N'}:queue    hash    a FairMutex's waiters, a doubly linked list: per waiter W,
//	                       W -> 1 (queued), W#exp -> its own lease's end (Redis time, ms),
//	                       W#seq -> the seq of W's latest call that applied, W#lease -> the
//	                       lease to hand it (0: what is left of its own lease), W#wake ->
//	                       when W asks again at the latest (Redis time, ms; 0: unknown),
//	                       W#prev and W#next -> its neighbours; #head and #last -> the
//	                       first and the last waiter
//
// The queue's key expires after its longest entry and goes when the last
// waiter leaves; a waiter whose own lease passed is dropped when it reaches
// the head. The watchdog renews an entry's W#exp as it renews a hold. The
// release that frees a fair lock hands it, in the same call, to the live
// waiter longest in the queue. When that waiter is the heir the release
// names (a waiter of the releaser's Client, ARGV[8..10] as for
// release.lua), the grant is in the reply ({Handed, token}), its seq on the
// lock is the one reserved for it, and nothing is published to it;
// otherwise the release publishes '@<W> <seq> <token>' on the inbox of that
// waiter's Client (its seq on the lock is its queued call's). Either way
// the waiter after W must ask for the lock within ms: if W died, or its
// fixed lease runs out, the lock expires then. It is told '@<next> next
// <ms>' unless it asks by then anyway: its latest refusal (W#wake) has it
// ask no later, or it is of W's own Client and the watchdog renews W's
// lease, which then ends only with W's process, and the waiter's.
//
// RWMutex (rw_*.lua, rw.lua): a Mutex's keys, on its own base, whose
// hash holds, for owner base B (<clientID>:<ownerToken>):
//
//	B:r -> read count, B:r#seq, B:r#exp     a read hold, with its own lease's end
//	B:w -> write count, B:w#seq, B:w#exp    the write hold
//	B:r#fix, B:w#fix -> 1                   a hold's lease is fixed, as a Mutex's F#fix
//	B:w#wait, B:r#wait -> ms                a writer, a reader, waiting until then
//	B:r#admit -> ms                         a reader a write release admitted ahead of
//	                                        the waiting writers
//	mode -> 'rw'                            the hash is a read-write lock's
//	w -> B:w                                the writer, while one holds
//	wait -> ms                              the latest end of a waiting writer's mark:
//	                                        new readers are refused until then
//	nr -> n                                 the read holds in the hash, live or not yet pruned
//	waiters -> 1                            someone was refused: a release that may let
//	                                        them in publishes 'all'
//
// Each hold's #exp counts, not the key's expiry, which only bounds the
// hash's life. The write acquire takes a new token from P{N'}:token; a
// read hold's token is the counter's value, the latest write's. An
// RWMutex and a Mutex of the same name exclude each other.
//
// Semaphore (semaphore_*.lua, holders.lua), on the base P{N'}:semaphore:
//
//	P{N'}:semaphore          hash    F -> permits F holds, F#seq, F#exp -> F's own lease's end,
//	                                 F#fix as a Mutex's; waiters -> 1. It expires with its
//	                                 last holder.
//	P{N'}:semaphore:permits  string  the number of permits, persistent
//	P{N'}:semaphore:unlock   channel 'unlocked' for one permit back, 'all' for more, and
//	                                 'all' when permits are set or added
//	P{N'}:semaphore:fence    hash    the give-up fences, as a lock's; C#seq -> the seq of Client
//	                                 C's latest ReleasePermit call that gave a permit back
//	P{N'}:semaphore:fence:C!<seq>    string  the answer of a call of semaphore_permits,
//	                                 semaphore_permit_extend or force_release (once.lua)
//
// A holder whose F#exp has passed holds nothing: every script drops it
// before it decides. A travelling permit (AcquirePermit) is the holder
// F = 'permit:<id>', F -> 1, whose acquire is a request with F as owner
// (semaphore_acquire, settled by semaphore_release); any Client gives it
// back with semaphore_permit_release and lengthens it with
// semaphore_permit_extend.
//
// CountDownLatch (latch_*.lua), on the base P{N'}:latch:
//
//	P{N'}:latch          hash    count -> the count; gen -> the latch_set call that set it;
//	                             C#seq -> the seq of Client C's latest call that counted;
//	                             life -> the longest fence life of those Clients. At 0 it
//	                             expires that life later.
//	P{N'}:latch:unlock   channel 'all' when the count reaches 0
//	P{N'}:latch:fence    hash    C -> the highest seq of C whose reply was lost
//	P{N'}:latch:fence:C!<seq>  string  the answer of a call of latch_set (once.lua)
//
// A Mutex, a Semaphore and a CountDownLatch of one name share a slot but
// no key.
//
// # The request protocol
//
// A request whose reply is lost may still have run, and a copy rueidis
// queued may reach Redis after its caller gave up, after a resend, or
// after a later request. The scripts make every request apply at most
// once and never after its caller gave up, without a key per request;
// package rlock drives them (request.go):
//
//   - One request at a time per owner and lock. The calls of one owner on
//     one lock take turns inside its Client, so the Client knows the count
//     Redis confirmed, and each acquire and release carries the absolute
//     count it sets (ARGV[3]): concurrent re-entries cannot undo each
//     other, and a re-entry racing the final release is ordered before or
//     after it. A latch's requests take turns per Client.
//   - Sequence numbers. Every call carries a new number from its Client's
//     counter (ARGV[2]), above every earlier call of the owner. The hash
//     keeps F#seq, the number of the owner's latest call that applied (a
//     fair waiter's W#seq in the queue, a latch Client's C#seq): a call
//     numbered at or below it is a copy of an earlier one.
//   - Fences. A call sent after one whose reply was lost (a resend, or the
//     settling call after the caller gave up) names that call's number as
//     superseded (ARGV[5]; ARGV[4] for the latch), and fence.lua records
//     it in the fences hash, which refuses every copy numbered up to it,
//     also after the lock was freed and its hash deleted. A fence lives for
//     the fence life (ARGV[6]; ARGV[5] for the latch): the Client's lease
//     plus two retry timeouts, longer than any copy may travel.
//   - Stale. A call refused by the owner's latest number or by a fence
//     answers Stale and does nothing. (A release of an owner that holds
//     nothing has nothing to undo: release.lua answers it NotHeld.) The
//     caller of a live request never gets Stale, since its call is the
//     owner's latest; only a copy arriving late does.
//   - Settling. When a caller gives up with a reply still missing, the
//     request is settled before the owner's turn ends: a release call back
//     to the confirmed count supersedes the lost calls and takes back
//     whatever the one that ran did (a fair release also takes the owner
//     out of the queue). A latch settles with a count-down call that
//     counts nothing (ARGV[4] '0'); it carries the number reserved for the
//     request (ARGV[3]), as a resend does, and answers Counted if a call of the
//     request counted, so a request counts once.
//   - Leases only lengthen. A re-entry and a renewal use PEXPIRE GT, and a
//     release leaves the lease as it is, so a key never expires before
//     the local deadline of a live hold.
//   - Publish only to waiters. A refused acquire marks the hash (waiters),
//     and so does a waiter that takes the lock; only the release that
//     frees a marked lock publishes, to the one Client waiting longest
//     when a Mutex's waiting Clients are recorded (waiting.lua).
//
// An uncontended Lock and Unlock of a Mutex is two scripts and six
// commands: EXISTS, INCR, HSET, PEXPIRE, then HMGET, DEL. It leaves no
// key but the fencing counter, and writes a fence only after a lost
// reply. What the protocol cannot do: if Redis stays unreachable for the
// whole retry timeout after a lost reply, the settling call cannot be
// sent, and a copy that arrives after its fence would have expired holds
// the lock for one lease, renewed by nobody.
package lua
