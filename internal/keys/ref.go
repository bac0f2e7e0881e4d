package keys

import "strings"

// Ref stands for the keys of one lock in one string: its hash key, from
// which Value makes the others when a call needs them. A handle keeps a
// Ref rather than its Keys, so that a lock held (whose handle its holder
// keeps) costs its hash key in memory, not five names: the others are made
// per call, in one allocation.
type Ref struct {
	hash string
}

// semaphoreSuffix ends the hash key of a semaphore, and only of one: a
// lock of its own ends at its tag's '}', a grouped name holds no ':', and
// every other kind's base ends in another word (kinds.go).
const semaphoreSuffix = "}:semaphore"

// NewRef returns the Ref of New(prefix, name).
func NewRef(prefix, name string) Ref {
	return Ref{base(prefix, name, "")}
}

// NewGroupedRef returns the Ref of NewGrouped(prefix, group, name).
func NewGroupedRef(prefix, group, name string) Ref {
	return Ref{prefix + "{" + escape(group, '}') + "}/" + escape(name, ':')}
}

// NewRWRef returns the Ref of NewRW(prefix, name).
func NewRWRef(prefix, name string) Ref {
	return Ref{base(prefix, name, ":rw")}
}

// NewFairRef returns the Ref of NewFair(prefix, name).
func NewFairRef(prefix, name string) Ref {
	return Ref{base(prefix, name, ":fair")}
}

// NewSemaphoreRef returns the Ref of NewSemaphore(prefix, name).
func NewSemaphoreRef(prefix, name string) Ref {
	return Ref{base(prefix, name, semaphoreSuffix[1:])}
}

// NewLatchRef returns the Ref of NewLatch(prefix, name).
func NewLatchRef(prefix, name string) Ref {
	return Ref{base(prefix, name, ":latch")}
}

// base returns the base of the keys of lock name under prefix, followed
// by kind (a kind's word, or "" for a Mutex), in one allocation.
func base(prefix, name, kind string) string {
	return prefix + "{" + escape(name, '}') + "}" + kind
}

// Hash returns the hash key: Value().Hash, without making the others.
func (r Ref) Hash() string {
	return r.hash
}

// AppendChannel appends Value().Channel to b, and returns the extended
// buffer: the channel's name without making the other keys.
func (r Ref) AppendChannel(b []byte) []byte {
	return append(append(b, r.hash...), channelSuffix...)
}

// Value returns the keys r stands for, in one allocation (none for the
// zero Ref, which stands for no lock). A semaphore's fencing-counter key
// holds its number of permits instead (NewSemaphore).
func (r Ref) Value() Keys {
	switch {
	case r.hash == "":
		return Keys{}
	case strings.HasSuffix(r.hash, semaphoreSuffix):
		return fromBase(r.hash, ":permits")
	}
	return fromBase(r.hash, ":token")
}
