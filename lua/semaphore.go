package lua

// SemaphoreAcquire takes one more permit for an owner; it takes Acquire's
// KEYS, ARGV and replies (see semaphore_acquire.lua).
var SemaphoreAcquire = load("semaphore_acquire.lua", once)

// SemaphoreRelease gives back permits of an owner; it takes Release's KEYS,
// ARGV and replies (see semaphore_release.lua).
var SemaphoreRelease = load("semaphore_release.lua", once)

// SemaphoreAvailable counts a semaphore's free permits; read-only, so
// retryable (see semaphore_available.lua).
var SemaphoreAvailable = load("semaphore_available.lua", retryable)

// SemaphorePermits sets or changes a semaphore's permits, once per call
// (once.lua; see semaphore_permits.lua).
var SemaphorePermits = load("semaphore_permits.lua", once)

// SemaphorePermitRelease gives back a travelling permit by its id, from
// any Client, once per request; it takes Release's KEYS and ARGV layout
// (see semaphore_permit_release.lua). A travelling permit's acquire is
// SemaphoreAcquire, and the settling of a lost one SemaphoreRelease, with
// the permit as the owner.
var SemaphorePermitRelease = load("semaphore_permit_release.lua", once)

// SemaphorePermitExtend lengthens a travelling permit's lease, once per
// call (once.lua; see semaphore_permit_extend.lua).
var SemaphorePermitExtend = load("semaphore_permit_extend.lua", once)
