package keys

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlock/rlock/internal/slot"
)

// TestKindsNeverCollide: a lock, a read-write lock, a fair lock, a
// semaphore and a latch share no key or channel, whatever their names, and
// each resource's keys share one slot.
func TestKindsNeverCollide(t *testing.T) {
	names := []string{"x", "{x}", "x}:semaphore", "x}:latch", "{x}:semaphore", "x:semaphore", "x}:token", "%7D", "g}/a", "x}:rw", "x}:fair", "x:rw", "{x}:fair:queue"}
	owner := map[string]string{}
	for _, name := range names {
		for kind, k := range map[string]Keys{
			"lock":      New("rlock:", name),
			"rw":        NewRW("rlock:", name),
			"fair":      NewFair("rlock:", name),
			"semaphore": NewSemaphore("rlock:", name),
			"latch":     NewLatch("rlock:", name),
			"grouped":   NewGrouped("rlock:", name, "semaphore"),
		} {
			what := kind + " " + name
			for _, key := range all(k) {
				if other, ok := owner[key]; ok {
					t.Errorf("%s and %s share %q", what, other, key)
				}
				owner[key] = what
				assert.Equal(t, slot.Of(k.Hash), slot.Of(key), "%s: %q is in its hash's slot", what, key)
			}
		}
	}
	assert.Equal(t, "rlock:{s}:semaphore:permits", NewSemaphore("rlock:", "s").Token)
	assert.Equal(t, "rlock:{l}:latch:unlock", NewLatch("rlock:", "l").Channel)
	assert.Equal(t, "rlock:{r}:rw", NewRW("rlock:", "r").Hash)
	assert.Equal(t, "rlock:{f}:fair:queue", NewFair("rlock:", "f").Queue)
}
