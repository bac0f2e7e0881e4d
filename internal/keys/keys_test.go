package keys

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/rlock/rlock/internal/slot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNew(t *testing.T) {
	k := New("rlock:", "orders")
	assert.Equal(t, Keys{Hash: "rlock:{orders}", Channel: "rlock:{orders}:unlock", Token: "rlock:{orders}:token"}, k)
	assert.Equal(t, "rlock:{orders}:latch:r1", k.Latch("r1"))

	tagged := New("rlock:", "{tenant}:orders")
	assert.Equal(t, "rlock:{tenant}:orders", tagged.Hash, "a name with its own hash tag is used as is")
}

func TestChecks(t *testing.T) {
	assert.Error(t, CheckName(""))
	assert.Error(t, CheckName("}x"))
	assert.NoError(t, CheckName("a{}b"))
	assert.Error(t, CheckPrefix("app{1}:"))
	assert.NoError(t, CheckPrefix(""))
}

// FuzzKeysShareSlot checks that every name of a lock lands in one Cluster
// slot, whatever valid name and prefix, so that one script touches one slot.
func FuzzKeysShareSlot(f *testing.F) {
	for _, seed := range [][2]string{
		{"rlock:", "orders"}, {"rlock:", "{tenant}:x"}, {"", "a{}b"}, {"p{x}:", "y"},
		{"rlock:", "{"}, {"rlock:", "}{"}, {"", ""}, {"{", "}"}, {"", "x{}"}, {"", "{}y"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, prefix, name string) {
		if CheckPrefix(prefix) != nil || CheckName(name) != nil {
			return
		}
		k := New(prefix, name)
		want := slot.Of(k.Hash)
		for _, key := range []string{k.Channel, k.Token, k.Latch("request")} {
			if got := slot.Of(key); got != want {
				t.Fatalf("prefix %q name %q: %q in slot %d, hash %q in slot %d", prefix, name, key, got, k.Hash, want)
			}
		}
	})
}
