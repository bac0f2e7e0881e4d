package lua

// The scripts of a lock (Mutex, and the engine every primitive runs on).
// Each takes the KEYS and ARGV its file's header names and answers as it
// says.

// Acquire takes or re-enters a lock; see acquire.lua.
var Acquire = load("acquire.lua", once)

// Release sets an owner's hold count lower, freeing the lock at 0; see
// release.lua.
var Release = load("release.lua", once)

// FairAcquire is Acquire for a fair lock, which queues its waiters; see
// fair_acquire.lua.
var FairAcquire = load("fair_acquire.lua", once)

// FairRelease is Release for a fair lock: at 0 it hands the lock over to
// the next waiter; see fair_release.lua.
var FairRelease = load("fair_release.lua", once)

// ForceRelease deletes a lock whoever holds it, once per call (once.lua);
// see force_release.lua.
var ForceRelease = load("force_release.lua", once)

// Void settles a call of a script that runs once per call (once.lua) and
// whose reply never came: it never runs after, and its answer, if it ran,
// is told. It changes nothing the second time, so it is retryable; see
// void.lua.
var Void = load("void.lua", retryable)

// Renew extends the leases of a batch of holds in one Cluster slot; see
// renew.lua. It is owner-checked and only lengthens, so it is retryable.
var Renew = load("renew.lua", retryable)

// Inspect reads a snapshot of one or more locks of one name (any kind) for
// operators, writing nothing; see inspect.lua. It is read-only (EVALSHA_RO, which rueidis may resend).
var Inspect = load("inspect.lua", readOnly)

// HoldCount reads an owner's count, 0 once its own lease has ended,
// writing nothing; see hold_count.lua.
var HoldCount = load("hold_count.lua", retryable)

// Do runs a holder's commands atomically with the check that it holds the
// lock, once per request; see do.lua.
var Do = load("do.lua", once)
