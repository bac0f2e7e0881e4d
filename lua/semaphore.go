package lua

import (
	_ "embed"

	"github.com/redis/rueidis"
)

var (
	//go:embed holders.lua
	holdersSrc string
	//go:embed semaphore_acquire.lua
	semaphoreAcquireSrc string
	//go:embed semaphore_release.lua
	semaphoreReleaseSrc string
	//go:embed semaphore_available.lua
	semaphoreAvailableSrc string
	//go:embed semaphore_permits.lua
	semaphorePermitsSrc string
)

// SemaphoreAcquire takes one more permit for an owner; it takes Acquire's
// KEYS, ARGV and replies (see semaphore_acquire.lua).
var SemaphoreAcquire = rueidis.NewLuaScript(withHelpers(semaphoreAcquireSrc, fenceSrc, holdersSrc))

// SemaphoreAcquireSource is semaphore_acquire.lua for the
// replica-acknowledged acquire, as AcquireSource.
var SemaphoreAcquireSource = newSource(withHelpers(semaphoreAcquireSrc, fenceSrc, holdersSrc))

// SemaphoreRelease gives back permits of an owner; it takes Release's KEYS,
// ARGV and replies (see semaphore_release.lua).
var SemaphoreRelease = rueidis.NewLuaScript(withHelpers(semaphoreReleaseSrc, fenceSrc, holdersSrc))

// SemaphoreAvailable counts a semaphore's free permits; read-only, so
// retryable (see semaphore_available.lua).
var SemaphoreAvailable = rueidis.NewLuaScriptRetryable(withHelpers(semaphoreAvailableSrc, holdersSrc))

// SemaphorePermits sets or changes a semaphore's permits (see
// semaphore_permits.lua).
var SemaphorePermits = rueidis.NewLuaScript(semaphorePermitsSrc)
