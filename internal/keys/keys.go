// Package keys names the Redis keys and channel of one lock.
//
// All names of a lock share one Cluster hash tag, so that every script touches
// a single slot: for a lock N under prefix P the base is P{N}, or P+N when N
// already carries a hash tag of its own.
package keys

import (
	"errors"
	"strings"

	"github.com/rlock/rlock/internal/slot"
)

// Keys are the Redis names of one lock.
type Keys struct {
	Hash    string // hash: owner field -> hold count; its PEXPIRE is the lease
	Channel string // unlock notifications
	Token   string // fencing counter, INCR on every first acquire
	Fence   string // give-up fences: per owner, the request sequence number below which its calls are refused; written only after a reply was lost
}

// CheckName reports why name cannot name a lock. A name must be non-empty,
// and must not start with '}', which would leave the wrapping hash tag empty.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case name[0] == '}':
		return errors.New("name starts with '}'")
	}
	return nil
}

// CheckPrefix reports why prefix cannot start key names. A prefix must not
// contain braces: the hash tag of a lock comes from its name.
func CheckPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return errors.New("prefix contains a brace")
	}
	return nil
}

// New returns the keys of lock name under prefix; both must pass CheckName
// and CheckPrefix.
func New(prefix, name string) Keys {
	base := prefix + name
	if _, tagged := slot.HashTag(name); !tagged {
		base = prefix + "{" + name + "}"
	}
	return Keys{Hash: base, Channel: base + ":unlock", Token: base + ":token", Fence: base + ":fence"}
}

// Latch names the short-lived key that records the reply to one request, so
// that a resent request is answered without being applied twice.
func (k Keys) Latch(requestID string) string {
	return k.Hash + ":latch:" + requestID
}
