package watchdog

import "time"

// Entry is one hash field that a Watchdog keeps alive by renewing its
// key's lease (and the field's own, where it has one): a lock holder's
// field, or a fair lock's queued waiter. Fill in the exported fields and
// Add it; they must not change afterwards. An Entry is added once: after
// it was removed or lost, make a new one.
type Entry struct {
	// Key is the hash key.
	Key string
	// Field is the field in that hash.
	Field string
	// Holder, if not nil, learns what the renewals found. (An interface
	// rather than two funcs: what holds an Entry is its Holder, and a
	// method value would cost each entry two allocations.)
	Holder Holder

	// Bookkeeping of the Watchdog the entry was added to, guarded by its mu.
	w          *Watchdog
	phase      phase
	pending    callback // the callback the last round's reply calls for
	slot       uint16   // Cluster slot of Key, once slotted: the first round on a Cluster sets it
	slotted    bool
	due        int64  // wheel tick at which the next renewal is sent
	prev, next *Entry // neighbours in its wheel bucket
}

// Holder is told what the renewals of an Entry found. Its methods run on
// the Watchdog's goroutine, between rounds; they may call Remove.
type Holder interface {
	// Renewed is called after a renewal reply confirmed the entry, with
	// the time that renewal request was sent: Redis set the new lease no
	// earlier than that.
	Renewed(sent time.Time)
	// Lost is called at most once, with the entry, when a renewal reply
	// says the field is gone. The entry has left the watchdog by then.
	Lost(*Entry)
}

// phase is where a hold is in its life.
type phase uint8

const (
	unadded phase = iota // not added yet
	waiting              // in the wheel, until its renewal is due
	sending              // in the round being sent
	gone                 // removed, lost, or dropped by Close
)

// callback names the callback that a round has decided on and not yet run.
type callback uint8

const (
	noCall callback = iota
	callRenewed
	callLost
)
