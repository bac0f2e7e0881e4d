package keys

// The kind is part of the key. Every primitive but the Mutex has keys of
// its own, on the Mutex N's base followed by its kind: P{enc(N)}:rw,
// P{enc(N)}:fair, P{enc(N)}:semaphore and P{enc(N)}:latch. They share the
// Mutex N's Cluster slot but no key with it nor with each other: after the
// tag, a Mutex's keys are "" or exactly ":unlock", ":token", ":fence" and
// ":queue", a grouped lock's start with '/', and each kind's base is one
// word no other suffix starts with. So Mutex("x"), RWMutex("x"),
// FairMutex("x"), Semaphore("x") and CountDownLatch("x") are five
// independent resources.

// NewRW returns the keys of read-write lock name under prefix, laid out as
// a lock's (New) on its own base.
func NewRW(prefix, name string) Keys {
	return NewRWRef(prefix, name).Value()
}

// NewFair returns the keys of fair lock name under prefix, laid out as a
// lock's (New) on its own base; Queue holds its waiters in line.
func NewFair(prefix, name string) Keys {
	return NewFairRef(prefix, name).Value()
}

// NewSemaphore returns the keys of semaphore name under prefix: Hash holds
// the permit holders (it expires with them), Channel tells waiters that
// permits came back, Fence is the give-up fences, and Token, where a lock
// keeps its fencing counter, holds the number of permits (persistent: it
// outlives every holder). Permits have no fencing token; Queue is unused.
func NewSemaphore(prefix, name string) Keys {
	return NewSemaphoreRef(prefix, name).Value()
}

// NewLatch returns the keys of count-down latch name under prefix: Hash
// holds the count and each Client's latest applied CountDown, Channel tells
// waiters the count reached 0, Fence is the give-up fences. Token and Queue
// are unused.
func NewLatch(prefix, name string) Keys {
	return NewLatchRef(prefix, name).Value()
}
