package rlock

import "github.com/rlock/rlock/internal/keys"

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
	return &Mutex{newLock(c, name, mutexKind, err, keys.NewGroupedRef(c.prefix(), group, name))}
}
