package rlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// Kind is the kind of lock a LockState describes: the primitive that made
// it. A name is a different lock for each kind (Mutex("x") and
// Semaphore("x") share no key), so a name and a kind name one lock.
type Kind string

// The kinds of lock.
const (
	KindMutex     Kind = keys.KindMutex     // Mutex, GroupedMutex
	KindRWMutex   Kind = keys.KindRWMutex   // RWMutex
	KindFairMutex Kind = keys.KindFairMutex // FairMutex
	KindSemaphore Kind = keys.KindSemaphore // Semaphore
	KindLatch     Kind = keys.KindLatch     // CountDownLatch
)

// inspectOrder is every kind, in the order in which Client.Inspect looks
// for a name's lock.
var inspectOrder = []Kind{KindMutex, KindRWMutex, KindFairMutex, KindSemaphore, KindLatch}

// keysOf returns the keys of the lock of kind called name under prefix.
func keysOf(kind Kind, prefix, name string) keys.Keys {
	switch kind {
	case KindRWMutex:
		return keys.NewRW(prefix, name)
	case KindFairMutex:
		return keys.NewFair(prefix, name)
	case KindSemaphore:
		return keys.NewSemaphore(prefix, name)
	case KindLatch:
		return keys.NewLatch(prefix, name)
	}
	return keys.New(prefix, name)
}

// LockState is a snapshot of one lock in Redis, of any kind, for
// operators: who holds it, how often, for how long, with which fencing
// token, who waits, and what a semaphore or latch counts. It is read in one
// script call, so its parts agree with each other. It is a diagnostic, not
// a synchronisation primitive: the lock may change the moment after it was
// read, so never decide from it whether to take, release or use a lock.
type LockState struct {
	Name string
	// Group is the group of a lock from GroupedMutex; "" for any other.
	Group string
	Kind  Kind
	Key   string // the lock's hash key
	// Type is the Redis type of Key: "hash" for a held lock (a counting
	// latch, a semaphore with holders), "none" for a free one; anything
	// else means something other than rlock wrote Key.
	Type string
	// Lease is what is left of Key's lease, the lock's TTL: 0 when Key is
	// absent, -1 when it has no expiry (a counting latch). An RWMutex's or
	// a Semaphore's key only outlives its holds, each of which has a lease
	// of its own (Holder.Lease).
	Lease time.Duration
	// Holders are the live holds, by field: more than one for primitives
	// with shared holds (an RWMutex's readers, a Semaphore's permits). A
	// hold whose own lease ended holds nothing and is left out.
	Holders []Holder
	// Waiters are the owners the lock's Redis state names as waiting: a
	// FairMutex's queue, first to last (live entries only), and an
	// RWMutex's waiting writers and readers, by field. A Mutex's or a
	// Semaphore's waiters keep no entry of their own: the mark "waiters"
	// and Subscribers tell of them.
	Waiters []Waiter
	// Marks are the hash's other fields: "waiters" (a release must
	// publish; a Mutex's counts from 1 the hand-overs in a row within a
	// Client that another Client waited through), and whatever a
	// primitive keeps beside its holders (an RWMutex's "mode", a latch's
	// "count" and each Client's sequence).
	Marks map[string]string
	// FencingToken is the last token handed out on this lock, the token of
	// its current holds (an RWMutex's readers hold the latest write's); 0
	// when none was, and for a Semaphore or a latch, which have none.
	FencingToken int64
	// Permits is a Semaphore's number of permits, Available those that no
	// live holder holds (below 0 when permits were taken away while
	// held); 0 for every other kind.
	Permits, Available int
	// Count is a CountDownLatch's count: 0 when it reached 0 or was never
	// set, and for every other kind.
	Count int
	// Subscribers counts the subscriptions to the lock's channel (PUBSUB
	// NUMSUB, SHARDNUMSUB on a Cluster): one per rlock Client with waiters
	// on this lock, however many waiters each has. Reading it subscribes
	// to nothing.
	Subscribers int
}

// Holder is one owner's hold in a LockState.
type Holder struct {
	// Field is the owner's hash field: <clientID>:<ownerToken>, and the
	// kind's suffix (an RWMutex's ":r" for a read hold, ":w" for the
	// write hold).
	Field string
	// Local says this Client made the hold.
	Local bool
	// Count is the hold count: 1, plus one per re-entry; a Semaphore
	// holder's permits.
	Count int
	// Lease is what is left of the hold's own lease (F#exp) for a hold
	// that has one beside the key's (RWMutex, Semaphore); 0 for one that
	// has none.
	Lease time.Duration
	// Token is the hold's fencing token (LockState.FencingToken); 0 for a
	// Semaphore's permits, which have none.
	Token int64
}

// Waiter is one owner waiting in a LockState.
type Waiter struct {
	// Field is the owner's field, as a Holder's.
	Field string
	// Local says this Client's owner waits.
	Local bool
	// Lease is what is left of the waiter's entry (a FairMutex waiter's own
	// lease, renewed while it waits) or mark (an RWMutex waiter's).
	Lease time.Duration
}

// Inspect reads the state of the lock called name in Redis, whatever its
// kind; see LockState. A name is a different lock for each kind, and one
// name may be used by several kinds at once: Inspect returns the first
// that is there, in the order Mutex, RWMutex, FairMutex, Semaphore,
// CountDownLatch, all read in one script call; a free Mutex's when none
// is. A lock is there while its hash is (it is held, a latch counts or
// reached 0 a moment ago), a fair lock's queue or a semaphore's permits.
// To see every kind of one name, call each handle's Inspect, or range over
// Locks. It is a diagnostic for operators, not a synchronisation
// primitive.
func (c *Client) Inspect(ctx context.Context, name string) (LockState, error) {
	r := newResource(c, name, keys.CheckName(name), keys.NewRef(c.prefix(), name))
	if err := r.check(ctx); err != nil {
		return LockState{}, r.wrap(err)
	}
	ks := make([]keys.Keys, len(inspectOrder))
	for i, kind := range inspectOrder {
		ks[i] = keysOf(kind, c.prefix(), name)
	}
	states, there, err := c.read(ctx, inspectOrder, ks)
	if err != nil {
		return LockState{}, r.wrap(err)
	}
	i := max(slices.Index(there, true), 0)
	c.named(&states[i], name, ks[i].Hash)
	return states[i], nil
}

// inspect reads the state of l, a Mutex's engine (the one kind that asks
// by it: every other primitive's Inspect names its kind).
func (l *lock) inspect(ctx context.Context) (LockState, error) {
	return l.inspectAs(ctx, KindMutex)
}

// inspectAs reads the state of the resource, a lock of kind.
func (r *resource) inspectAs(ctx context.Context, kind Kind) (LockState, error) {
	if err := r.check(ctx); err != nil {
		return LockState{}, r.wrap(err)
	}
	st, _, err := r.c.inspectOne(ctx, kind, r.name, r.keys.Value())
	if err != nil {
		return LockState{}, r.wrap(err)
	}
	return st, nil
}

// inspectOne reads the state of the lock of kind called name whose keys
// are k, and whether it is there (see Client.Inspect).
func (c *Client) inspectOne(ctx context.Context, kind Kind, name string, k keys.Keys) (LockState, bool, error) {
	states, there, err := c.read(ctx, []Kind{kind}, []keys.Keys{k})
	if err != nil {
		return LockState{}, false, err
	}
	c.named(&states[0], name, k.Hash)
	return states[0], there[0], nil
}

// read reads the locks of kinds, whose keys are ks (all in one slot), and
// the subscriptions to their channels, in one inspect.lua call, and reports
// which of them are there.
func (c *Client) read(ctx context.Context, kinds []Kind, ks []keys.Keys) ([]LockState, []bool, error) {
	names, args := make([]string, 0, 3*len(ks)), make([]string, 1, 1+len(ks))
	args[0] = "numsub"
	if c.publish == "spublish" {
		args[0] = "shardnumsub"
	}
	for _, k := range ks {
		names = append(names, k.Hash, k.Token, k.Queue)
		args = append(args, k.Channel)
	}
	snap, err := lua.Inspect.Exec(ctx, c.rc, names, args).ToArray()
	if err != nil {
		return nil, nil, fmt.Errorf("rlock: inspect: %w", err)
	}
	if len(snap) != 1+len(ks) {
		return nil, nil, fmt.Errorf("rlock: unexpected inspect reply of %d entries", len(snap))
	}
	now, err := snap[0].AsInt64()
	if err != nil {
		return nil, nil, fmt.Errorf("rlock: inspect time: %w", err)
	}
	states, there := make([]LockState, len(ks)), make([]bool, len(ks))
	for i, kind := range kinds {
		if states[i], there[i], err = c.lockState(kind, now, snap[1+i]); err != nil {
			return nil, nil, err
		}
		states[i].Key = ks[i].Hash
	}
	return states, there, nil
}

// named names st, the lock called name whose hash is key: a grouped lock's
// hash says its group.
func (c *Client) named(st *LockState, name, key string) {
	st.Name = name
	if group, _, ok := keys.ParseGrouped(c.prefix(), key); ok {
		st.Group = group
	}
}

// lockState reads one lock's part of inspect.lua's reply as a lock of
// kind, and whether the lock is there.
func (c *Client) lockState(kind Kind, now int64, m rueidis.RedisMessage) (LockState, bool, error) {
	part, err := m.ToArray()
	if err != nil || len(part) != 6 {
		return LockState{}, false, fmt.Errorf("rlock: unexpected inspect reply %v (%v)", m, err)
	}
	st := LockState{Kind: kind}
	if st.Type, err = part[0].ToString(); err != nil {
		return LockState{}, false, fmt.Errorf("rlock: inspect type: %w", err)
	}
	pttl, err := part[1].AsInt64()
	if err != nil {
		return LockState{}, false, fmt.Errorf("rlock: inspect pttl: %w", err)
	}
	switch {
	case pttl == -1:
		st.Lease = -1
	case pttl > 0:
		st.Lease = fromMillis(pttl)
	}
	counter, cerr := part[2].ToString()
	fields, err := part[3].AsStrMap()
	if err != nil {
		return LockState{}, false, fmt.Errorf("rlock: inspect fields: %w", err)
	}
	queue, err := part[4].AsStrMap()
	if err != nil {
		return LockState{}, false, fmt.Errorf("rlock: inspect queue: %w", err)
	}
	subs, err := part[5].AsInt64()
	if err != nil {
		return LockState{}, false, fmt.Errorf("rlock: inspect subscribers: %w", err)
	}
	st.Subscribers = int(subs)
	st.Holders, st.Marks = c.holders(fields, now)
	there := st.Type != "none" || len(queue) > 0
	switch kind {
	case KindSemaphore:
		st.Permits, _ = strconv.Atoi(counter)
		st.Available = st.Permits
		for _, h := range st.Holders {
			st.Available -= h.Count
		}
		there = there || cerr == nil
	case KindLatch:
		st.Count, _ = strconv.Atoi(fields["count"])
	default:
		st.FencingToken, _ = strconv.ParseInt(counter, 10, 64)
		for i := range st.Holders {
			st.Holders[i].Token = st.FencingToken
		}
	}
	switch kind {
	case KindFairMutex:
		st.Waiters = c.queued(queue, now)
	case KindRWMutex:
		st.Waiters = c.marked(fields, now)
	}
	return st, there, nil
}

// holders sorts a lock hash's fields into live holders and marks. A holder
// is a field F with a count beside F#seq (the request protocol's, which
// every primitive on the engine keeps) or F#exp (an own lease, in Redis
// ms, which ends now-ms from now; a hold whose own lease ended is dead and
// left out); those two and F#fix (its lease is fixed: lua/hold.lua) belong
// to it, every other field is a mark.
func (c *Client) holders(fields map[string]string, now int64) ([]Holder, map[string]string) {
	var holders []Holder
	hold := map[string]bool{} // every hold's field, live or dead
	for f, v := range fields {
		_, seq := fields[f+"#seq"]
		exp, own := fields[f+"#exp"]
		n, err := strconv.Atoi(v)
		if err != nil || !(seq || own) {
			continue
		}
		hold[f] = true
		h := Holder{Field: f, Local: c.local(f), Count: n}
		if own {
			ends, err := strconv.ParseInt(exp, 10, 64)
			if err != nil || ends <= now {
				continue
			}
			h.Lease = fromMillis(ends - now)
		}
		holders = append(holders, h)
	}
	slices.SortFunc(holders, func(a, b Holder) int { return strings.Compare(a.Field, b.Field) })
	var marks map[string]string
	for f, v := range fields {
		if i := strings.LastIndexByte(f, '#'); hold[f] || i >= 0 && hold[f[:i]] && (f[i:] == "#seq" || f[i:] == "#exp" || f[i:] == "#fix") {
			continue
		}
		if marks == nil {
			marks = map[string]string{}
		}
		marks[f] = v
	}
	return holders, marks
}

// queued returns a fair lock's live waiters, first to last, walking its
// queue (a linked list: see lua/queue.lua) from '#head' along the W#next
// links, at most once per field so that broken links end the walk.
func (c *Client) queued(queue map[string]string, now int64) []Waiter {
	var waiters []Waiter
	w, ok := queue["#head"]
	for steps := 0; ok && steps < len(queue); steps++ {
		if ends, err := strconv.ParseInt(queue[w+"#exp"], 10, 64); err == nil && ends > now {
			waiters = append(waiters, Waiter{Field: w, Local: c.local(w), Lease: fromMillis(ends - now)})
		}
		w, ok = queue[w+"#next"]
	}
	return waiters
}

// marked returns a read-write lock's waiting writers and readers, by
// field: the W#wait marks and the B:r#admit admissions (see lua/rw.lua)
// that have not ended by now. An admitted reader still waits: a write
// release let it in, and it holds nothing until it asks again.
func (c *Client) marked(fields map[string]string, now int64) []Waiter {
	var waiters []Waiter
	for f, v := range fields {
		w, ok := strings.CutSuffix(f, "#wait")
		if !ok {
			w, ok = strings.CutSuffix(f, "#admit")
		}
		ends, err := strconv.ParseInt(v, 10, 64)
		if ok && err == nil && ends > now {
			waiters = append(waiters, Waiter{Field: w, Local: c.local(w), Lease: fromMillis(ends - now)})
		}
	}
	slices.SortFunc(waiters, func(a, b Waiter) int { return strings.Compare(a.Field, b.Field) })
	return waiters
}

// local reports whether field is an owner of this Client's.
func (c *Client) local(field string) bool {
	return strings.HasPrefix(field, c.id+":")
}
