package keys

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rlock/rlock/internal/slot"
)

// TestKindsNeverCollide: a lock, a semaphore and a latch share no key or
// channel, whatever their names, and each resource's keys share one slot.
func TestKindsNeverCollide(t *testing.T) {
	names := []string{"x", "{x}", "x}:semaphore", "x}:latch", "{x}:semaphore", "x:semaphore", "x}:token", "%7D", "g}/a"}
	owner := map[string]string{}
	for _, name := range names {
		for kind, k := range map[string]Keys{
			"lock":      New("rlock:", name),
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
}
