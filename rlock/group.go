package rlock

import (
	"fmt"
	"unique"

	"github.com/rlock/rlock/internal/keys"
)

// GroupedMutex returns a handle on the lock called name in group. All locks
// of one group share one Redis Cluster hash slot, so that a MultiLock over
// them on one Cluster, or a script of your own, can touch them together;
// the price is that one Cluster node carries every lock of the group. Group
// and name must be non-empty; any other strings, braces and colons
// included, are valid. A grouped lock never shares a key with a lock from
// Mutex (Mutex("x") is not GroupedMutex("g", "x"), whatever g), nor with
// a lock of another group. The handle's Name is name.
func (c *Client) GroupedMutex(group, name string) *Mutex {
	err := keys.CheckGroup(group)
	if err == nil {
		err = keys.CheckName(name)
	}
	return newMutex(c, name, err, func(prefix string) keys.Keys { return keys.NewGrouped(prefix, group, name) })
}

// newMutex returns a handle on the lock called name whose keys keysOf
// builds from the Client's prefix; invalid, when not nil, says why the name
// cannot be a lock.
func newMutex(c *Client, name string, invalid error, keysOf func(prefix string) keys.Keys) *Mutex {
	m := &Mutex{c: c, name: name}
	switch {
	case c == nil || c.rc == nil:
		m.err = ErrNilClient
	case invalid != nil:
		m.err = fmt.Errorf("%w: %w", ErrInvalidName, invalid)
	default:
		m.keys = unique.Make(keysOf(c.cfg.prefix))
	}
	return m
}
