package keys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRefStandsForItsKeys: a Ref's hash and channel are its keys', and only a
// semaphore's Ref makes a permits key, whatever the names.
func TestRefStandsForItsKeys(t *testing.T) {
	for _, name := range []string{"x", "x}:semaphore", "{x}:semaphore", "semaphore", "x:semaphore}", "%7D:semaphore"} {
		for kind, r := range map[string]Ref{
			"lock":      NewRef("rlock:", name),
			"rw":        NewRWRef("rlock:", name),
			"fair":      NewFairRef("rlock:", name),
			"semaphore": NewSemaphoreRef("rlock:", name),
			"latch":     NewLatchRef("rlock:", name),
			"grouped":   NewGroupedRef("rlock:", name+"}:semaphore", name),
		} {
			k := r.Value()
			assert.Equal(t, k.Hash, r.Hash(), "%s %q", kind, name)
			assert.Equal(t, "pre"+k.Channel, string(r.AppendChannel([]byte("pre"))), "%s %q", kind, name)
			assert.Equal(t, kind == "semaphore", strings.HasSuffix(k.Token, ":permits"), "%s %q: %q", kind, name, k.Token)
		}
	}
	assert.Equal(t, Keys{}, Ref{}.Value(), "the zero Ref stands for no lock")
}
