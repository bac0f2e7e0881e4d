package keys

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// stateKeys returns the keys of lock name of kind under prefix that Parse
// reads back, and the other keys of that lock, which it must not.
func stateKeys(prefix, name, kind string) (state, other []string) {
	switch kind {
	case KindRWMutex:
		k := NewRW(prefix, name)
		return []string{k.Hash}, []string{k.Channel, k.Token, k.Fence, k.Queue}
	case KindFairMutex:
		k := NewFair(prefix, name)
		return []string{k.Hash, k.Queue}, []string{k.Channel, k.Token, k.Fence}
	case KindSemaphore:
		k := NewSemaphore(prefix, name)
		return []string{k.Hash, k.Token}, []string{k.Channel, k.Fence, k.Queue}
	case KindLatch:
		k := NewLatch(prefix, name)
		return []string{k.Hash}, []string{k.Channel, k.Token, k.Fence, k.Queue}
	}
	k := New(prefix, name)
	return []string{k.Hash}, []string{k.Channel, k.Token, k.Fence, k.Queue}
}

var kinds = []string{KindMutex, KindRWMutex, KindFairMutex, KindSemaphore, KindLatch}

func TestParse(t *testing.T) {
	for _, name := range []string{"x", "{x}", "a}b", "%", "%7D", "x}:rw", "x:fair", "g}/a", ":latch", "}"} {
		for _, kind := range kinds {
			state, other := stateKeys("rlock:", name, kind)
			for _, key := range state {
				n, k, ok := Parse("rlock:", key)
				assert.True(t, ok, "%q parses", key)
				assert.Equal(t, name, n, key)
				assert.Equal(t, kind, k, key)
				_, _, ok = Parse("other:", key)
				assert.False(t, ok, "%q is not under another prefix", key)
			}
			for _, key := range other {
				_, _, ok := Parse("rlock:", key)
				assert.False(t, ok, "%q says no lock is there", key)
			}
		}
	}
	for _, key := range []string{
		"rlock:", "rlock:{", "rlock:{x", "rlock:{}", "rlock:{%7d}", "rlock:{%41}", "rlock:{%2}", "rlock:{%}",
		"rlock:{x}:queue", "rlock:{x}:semaphore:unlock", "rlock:{x}/a", "rlock:{x}:rw:token", "{x}",
	} {
		_, _, ok := Parse("rlock:", key)
		assert.False(t, ok, "%q is no lock's", key)
	}
	g, n, ok := ParseGrouped("rlock:", NewGrouped("rlock:", "t}1", "orders:2024/05%").Hash)
	assert.True(t, ok)
	assert.Equal(t, []string{"t}1", "orders:2024/05%"}, []string{g, n})
	for _, key := range []string{"rlock:{g}/a:unlock", "rlock:{g}/", "rlock:{g}", "rlock:{g}/a%3a", "rlock:{}/a"} {
		_, _, ok := ParseGrouped("rlock:", key)
		assert.False(t, ok, "%q is no grouped lock's", key)
	}
}

// FuzzParseRoundTrips checks that Parse reads back the name and kind of
// every lock from its keys, and that any key it parses is a key of the lock
// it names: Parse is the inverse of the constructors, and no key has two
// readings.
func FuzzParseRoundTrips(f *testing.F) {
	for _, seed := range []struct{ prefix, name string }{
		{"rlock:", "x"}, {"", "{x}"}, {"p:", "%25"}, {"", "}:rw"}, {"a", "%7D%"}, {"rlock:", "x}:semaphore:permits"},
	} {
		f.Add(seed.prefix, seed.name, false, "")
		f.Add(seed.prefix, seed.name, true, "g")
	}
	f.Add("rlock:", "", false, "rlock:{%25}:fair:queue")
	f.Fuzz(func(t *testing.T, prefix, name string, grouped bool, key string) {
		if CheckPrefix(prefix) != nil || CheckName(name) != nil {
			return
		}
		for _, kind := range kinds {
			state, _ := stateKeys(prefix, name, kind)
			for _, k := range state {
				if n, kd, ok := Parse(prefix, k); !ok || n != name || kd != kind {
					t.Fatalf("Parse(%q, %q) = %q, %q, %v; want %q, %q", prefix, k, n, kd, ok, name, kind)
				}
			}
		}
		if grouped {
			k := NewGrouped(prefix, name, name+":"+key).Hash
			if g, n, ok := ParseGrouped(prefix, k); !ok || g != name || n != name+":"+key {
				t.Fatalf("ParseGrouped(%q, %q) = %q, %q, %v", prefix, k, g, n, ok)
			}
		}
		if n, kind, ok := Parse(prefix, key); ok {
			if state, _ := stateKeys(prefix, n, kind); !slices.Contains(state, key) {
				t.Fatalf("Parse(%q, %q) = %q, %q, but its keys are %q", prefix, key, n, kind, state)
			}
		}
		if g, n, ok := ParseGrouped(prefix, key); ok && NewGrouped(prefix, g, n).Hash != key {
			t.Fatalf("ParseGrouped(%q, %q) = %q, %q, whose hash is %q", prefix, key, g, n, NewGrouped(prefix, g, n).Hash)
		}
		if strings.HasPrefix(key, prefix+"{") {
			_, _, a := Parse(prefix, key)
			_, _, b := ParseGrouped(prefix, key)
			if a && b {
				t.Fatalf("%q parses as a lock and as a grouped lock", key)
			}
		}
	})
}
