// Package keys names the Redis keys and channel of one lock.
//
// For a lock N under prefix P the keys are built on a base:
//
//	P{enc(N)}              a lock of its own (New)
//	P{enc(G)}/enc2(N)      lock N of group G (NewGrouped)
//
// and are the base itself (the hash), base+":unlock" (the channel),
// base+":token" (the fencing counter), base+":fence" (the give-up fences)
// and base+":queue" (a fair lock's waiters, or a Mutex's waiting Clients:
// see Keys.Queue).
// enc percent-encodes '%' and '}', so the lock's hash tag always ends at the
// brace New adds, and all keys of a lock share one Cluster slot: the one of
// enc(N), or of enc(G) for every lock of group G. enc2 percent-encodes '%'
// and ':', so a grouped name ends where a suffix starts.
//
// Naming is injective: two different (prefix, group, name) never share a key
// or channel, whatever braces, colons or bytes they hold. The prefix has no
// brace, so it ends at the first '{'; the tag ends at the first '}'; after
// it, a lock of its own has "" or a suffix starting with ':', a grouped one
// '/'; a grouped name ends at the first ':'. Each part decodes uniquely,
// because '%' is only ever the start of an escape.
package keys

import (
	"errors"
	"strings"
)

// Keys are the Redis names of one lock.
type Keys struct {
	Hash    string // hash: owner field -> hold count; its PEXPIRE is the lease
	Channel string // unlock notifications
	Token   string // fencing counter, INCR on every first acquire
	// Fence holds the give-up fences: per-owner request sequence numbers,
	// recorded only when a request's outcome was unknown.
	Fence string
	// Queue holds a fair lock's waiters in line, as a doubly linked list
	// in one hash: per waiter W the fields W (queued), W#exp (the Redis
	// time in ms at which its own lease ends), W#seq (its latest call that
	// applied), W#lease (the lease to grant it), W#prev and W#next (its
	// neighbours), and #head and #last, the first and the last waiter
	// (lua/queue.lua keeps it); for a Mutex, the sorted set of the Clients
	// that wait (lua/waiting.lua).
	Queue string
}

// CheckName reports why name cannot name a lock: only the empty name
// cannot.
func CheckName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	return nil
}

// CheckGroup reports why group cannot name a group of locks: only the empty
// group cannot.
func CheckGroup(group string) error {
	if group == "" {
		return errors.New("empty group")
	}
	return nil
}

// CheckPrefix reports why prefix cannot start key names. A prefix must not
// contain braces: the hash tag of a lock comes from its name or group.
func CheckPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return errors.New("prefix contains a brace")
	}
	return nil
}

// New returns the keys of lock name under prefix; both must pass CheckName
// and CheckPrefix. The lock's slot is the one of its (encoded) name.
func New(prefix, name string) Keys {
	return NewRef(prefix, name).Value()
}

// NewGrouped returns the keys of lock name in group under prefix; name and
// group must pass CheckName and CheckGroup, prefix CheckPrefix. Every lock
// of a group is in the group's slot, so one script or MULTI can touch
// several of them on a Cluster; none shares a key with a lock made by New,
// nor with a lock of another group.
func NewGrouped(prefix, group, name string) Keys {
	return NewGroupedRef(prefix, group, name).Value()
}

// channelSuffix ends the unlock channel's name, after the base.
const channelSuffix = ":unlock"

// fromBase returns the keys built on base, whose fencing counter ends in
// token (":token", or a semaphore's ":permits"). Every suffix starts with
// ':': a base made by New ends at its tag's '}' and a grouped name holds no
// ':', so no key's suffix can be read as part of another lock's base.
//
// The four suffixed keys are cut from one string, one allocation for all;
// the hash is base itself.
func fromBase(base, token string) Keys {
	all := base + channelSuffix + base + token + base + ":fence" + base + ":queue"
	n := len(base)
	channel, all := all[:n+len(channelSuffix)], all[n+len(channelSuffix):]
	tok, all := all[:n+len(token)], all[n+len(token):]
	fence, queue := all[:n+6], all[n+6:]
	return Keys{Hash: base, Channel: channel, Token: tok, Fence: fence, Queue: queue}
}

// escape percent-encodes '%' and special in s, and nothing else.
func escape(s string, special byte) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == special {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c == special {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
