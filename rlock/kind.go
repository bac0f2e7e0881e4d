package rlock

import "github.com/rlock/rlock/lua"

// kind is what a lock-like primitive supplies to the engine: the scripts
// that take and release one owner's hold, the suffix of the owner's hash
// field, and the name the hooks report. It is data only: how the engine
// calls the scripts is one layout for every kind (scriptCall), and how
// their replies read is one decoder (parseGrant, parseRelease), because
// every kind's scripts answer with the same codes. The key set comes with
// the handle (keys.New, keys.NewSemaphore, ...), and the way a waiter
// waits is the primitive's own: lock.acquire waits on the unlock channel
// (waitOnChannel), Mutex's acquire parked in its Client's lot
// (waitParked), FairMutex's in the queue (waitInQueue). Nothing
// a kind supplies is a function value or an interface, so a call on one
// primitive never runs another primitive's code.
type kind struct {
	name    string      // what the hooks call it: "mutex"
	acquire *lua.Script // takes or re-enters a hold
	release *lua.Script // sets a hold's count lower, freeing the lock at 0
	// suffix ends the owner's hash field: two kinds of hold on one lock
	// (read and write) are two fields, two turns and two holds.
	suffix string
	// rationed says that Redis may refuse an owner more of a hold it has
	// (a Semaphore's next permit). Every other kind's acquire grants each
	// re-entry of a hold Redis has, so a refused one tells that the hold
	// was lost (lock.ask).
	rationed bool
	// marked says that a waiter's refusal marks its owner as waiting (an
	// RWMutex's readers and writers; a FairMutex's place in the queue):
	// the owner's calls share the mark, so each waits named by the
	// owner's field, and the last of them to stop waiting without the hold
	// takes the mark back (withdraw).
	marked bool
}
