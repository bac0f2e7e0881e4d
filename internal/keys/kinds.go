package keys

// A semaphore and a count-down latch of name N have keys of their own, on
// lock N's base followed by a kind: P{enc(N)}:semaphore and P{enc(N)}:latch.
// They share lock N's Cluster slot but no key with it: after the tag, a
// lock's keys are "" or exactly ":unlock", ":token", ":fence" and ":queue",
// and a grouped lock's start with '/'. So Mutex("x"), Semaphore("x") and
// CountDownLatch("x") are three resources.

// NewSemaphore returns the keys of semaphore name under prefix: Hash holds
// the permit holders (it expires with them), Channel tells waiters that
// permits came back, Fence is the give-up fences, and Token, where a lock
// keeps its fencing counter, holds the number of permits (persistent: it
// outlives every holder). Permits have no fencing token; Queue is unused.
func NewSemaphore(prefix, name string) Keys {
	k := fromBase(New(prefix, name).Hash + ":semaphore")
	k.Token = k.Hash + ":permits"
	return k
}

// NewLatch returns the keys of count-down latch name under prefix: Hash
// holds the count and each Client's latest applied CountDown, Channel tells
// waiters the count reached 0, Fence is the give-up fences. Token and Queue
// are unused.
func NewLatch(prefix, name string) Keys {
	return fromBase(New(prefix, name).Hash + ":latch")
}
