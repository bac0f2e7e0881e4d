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

// SemaphorePermits sets or changes a semaphore's permits (see
// semaphore_permits.lua).
var SemaphorePermits = load("semaphore_permits.lua", once)
