package keys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/rlock/rlock/internal/slot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		keys Keys
		base string
	}{
		{New("rlock:", "orders"), "rlock:{orders}"},
		{New("", "orders"), "{orders}"},
		{New("rlock:", "{tenant}:orders"), "rlock:{{tenant%7D:orders}"},
		{New("rlock:", "50%}"), "rlock:{50%25%7D}"},
		{New("rlock:", "a:b/c{d"), "rlock:{a:b/c{d}"},
		{NewGrouped("rlock:", "tenant-1", "orders"), "rlock:{tenant-1}/orders"},
		{NewGrouped("rlock:", "t}1", "orders:2024/05%"), "rlock:{t%7D1}/orders%3A2024/05%25"},
	} {
		assert.Equal(t, Keys{
			Hash: tc.base, Channel: tc.base + ":unlock", Token: tc.base + ":token", Fence: tc.base + ":fence", Queue: tc.base + ":queue",
		}, tc.keys)
	}
}

func TestGroupSharesSlot(t *testing.T) {
	want := slot.Of("{tenant}")
	for _, name := range []string{"a", "b:c", "{x}", "}"} {
		assert.Equal(t, want, slot.Of(NewGrouped("rlock:", "tenant", name).Hash), "lock %q of group tenant", name)
	}
	assert.Equal(t, want, slot.Of(New("rlock:", "tenant").Hash), "a group is in the slot of the lock of its name")
}

// TestNamesNeverCollide lists locks whose keys collided, or would under a
// careless encoding: no two share a key or channel.
func TestNamesNeverCollide(t *testing.T) {
	locks := map[string]Keys{}
	plain := func(name string) { locks["plain "+name] = New("rlock:", name) }
	grouped := func(group, name string) { locks["group "+group+" name "+name] = NewGrouped("rlock:", group, name) }
	for _, name := range []string{
		"x", "{x}", "{x}:token", "{x}:unlock", "{x}:fence", "a", "a}", "}", "%7D", "%", "%25", "%257D",
		"x}:token", "x}", "g", "g}/a", "{g}/a", "g}/a:unlock", "{g}/a:unlock", "{g}/a%3Aunlock", "a/b",
	} {
		plain(name)
	}
	for _, gn := range [][2]string{
		{"g", "a"}, {"g", "a:unlock"}, {"g", "a%3Aunlock"}, {"g", "a:token"}, {"g", "a/b"}, {"g/a", "b"},
		{"g}/a", "b"}, {"g", "a}/b"}, {"g", "}"}, {"g", "%7D"}, {"x", "token"}, {"x}:token", "a"}, {"{x", "y"},
	} {
		grouped(gn[0], gn[1])
	}
	owner := map[string]string{}
	for lock, k := range locks {
		for _, key := range all(k) {
			if other, ok := owner[key]; ok {
				t.Errorf("%s and %s share %q", lock, other, key)
			}
			owner[key] = lock
		}
	}
}

func TestHugeName(t *testing.T) {
	name := strings.Repeat("}%:{", 1<<18) // 1 MiB
	k := New("rlock:", name)
	assert.Len(t, k.Hash, len("rlock:{}")+len(name)+2*2*(1<<18))
	assert.Equal(t, slot.Of(k.Hash), slot.Of(k.Fence))
	assert.NotEqual(t, k.Hash, New("rlock:", name+"}").Hash)
}

func TestChecks(t *testing.T) {
	assert.Error(t, CheckName(""))
	assert.NoError(t, CheckName("}x"), "a name is never a hash tag of its own")
	assert.NoError(t, CheckName("a{}b"))
	assert.Error(t, CheckGroup(""))
	assert.NoError(t, CheckGroup("}"))
	assert.Error(t, CheckPrefix("app{1}:"))
	assert.NoError(t, CheckPrefix(""))
}

// all returns every key and channel of a lock.
func all(k Keys) []string { return []string{k.Hash, k.Channel, k.Token, k.Fence, k.Queue} }

// keysOf returns the keys of a lock of its own (group ignored), or of name in
// group, and false when the arguments are not valid.
func keysOf(prefix string, grouped bool, group, name string) (Keys, bool) {
	if CheckPrefix(prefix) != nil || CheckName(name) != nil || grouped && CheckGroup(group) != nil {
		return Keys{}, false
	}
	if grouped {
		return NewGrouped(prefix, group, name), true
	}
	return New(prefix, name), true
}

// FuzzKeysShareSlot checks that every key of a lock lands in one Cluster
// slot, whatever valid prefix, group and name, so that one script touches
// one slot.
func FuzzKeysShareSlot(f *testing.F) {
	for _, seed := range []struct {
		prefix, group, name string
		grouped             bool
	}{
		{"rlock:", "", "orders", false}, {"rlock:", "", "{tenant}:x", false}, {"", "", "a{}b", false},
		{"rlock:", "", "{", false}, {"rlock:", "", "}{", false}, {"", "", "}", false}, {"", "", "x{}", false},
		{"", "", "{}y", false}, {"p:", "", "%7D", false}, {"", "", strings.Repeat("}", 64<<10), false},
		{"rlock:", "g", "a", true}, {"", "}", "}", true}, {"", "{", ":", true}, {"p", "%", "a:b}{c", true},
	} {
		f.Add(seed.prefix, seed.grouped, seed.group, seed.name)
	}
	f.Fuzz(func(t *testing.T, prefix string, grouped bool, group, name string) {
		k, ok := keysOf(prefix, grouped, group, name)
		if !ok {
			return
		}
		want := slot.Of(k.Hash)
		for _, key := range all(k) {
			if got := slot.Of(key); got != want {
				t.Fatalf("prefix %q group %q (%v) name %q: %q in slot %d, hash %q in slot %d",
					prefix, group, grouped, name, key, got, k.Hash, want)
			}
		}
		if grouped {
			if peer := NewGrouped(prefix, group, "peer"); slot.Of(peer.Hash) != want {
				t.Fatalf("group %q: lock %q in slot %d, lock %q in slot %d", group, name, want, "peer", slot.Of(peer.Hash))
			}
		}
	})
}

// FuzzKeysInjective checks that two different locks, each named by a prefix
// and a name, with or without a group, never share a key or channel.
func FuzzKeysInjective(f *testing.F) {
	type lock struct {
		prefix, group, name string
		grouped             bool
	}
	for _, pair := range [][2]lock{
		{{"rlock:", "", "x", false}, {"rlock:", "", "{x}", false}},
		{{"rlock:", "", "x", false}, {"rlock:", "", "{x}:token", false}},
		{{"rlock:", "", "}", false}, {"rlock:", "", "%7D", false}},
		{{"rlock:", "", "a}", false}, {"rlock:", "", "a", false}},
		{{"rlock:", "", "%", false}, {"rlock:", "", "%25", false}},
		{{"rlock:", "g", "a", true}, {"rlock:", "", "g}/a", false}},
		{{"rlock:", "g", "a", true}, {"rlock:", "g", "a:unlock", true}},
		{{"rlock:", "g", "a/b", true}, {"rlock:", "g/a", "b", true}},
		{{"rlock:", "g}/a", "b", true}, {"rlock:", "g", "a}/b", true}},
		{{"rlock:", "g", "a", true}, {"rlock:", "g", "a", false}},
		{{"a", "", "b", false}, {"", "", "b", false}},
		{{"", "", "\x00", false}, {"", "", "\x00\x00", false}},
	} {
		f.Add(pair[0].prefix, pair[0].grouped, pair[0].group, pair[0].name,
			pair[1].prefix, pair[1].grouped, pair[1].group, pair[1].name)
	}
	f.Fuzz(func(t *testing.T, prefixA string, groupedA bool, groupA, nameA string,
		prefixB string, groupedB bool, groupB, nameB string) {
		a, okA := keysOf(prefixA, groupedA, groupA, nameA)
		b, okB := keysOf(prefixB, groupedB, groupB, nameB)
		if !okA || !okB {
			return
		}
		if !groupedA {
			groupA = ""
		}
		if !groupedB {
			groupB = ""
		}
		if prefixA == prefixB && groupedA == groupedB && groupA == groupB && nameA == nameB {
			if a != b {
				t.Fatalf("one lock, two sets of keys: %q and %q", all(a), all(b))
			}
			return
		}
		for _, x := range all(a) {
			for _, y := range all(b) {
				if x == y {
					t.Fatalf("prefix %q group %q (%v) name %q and prefix %q group %q (%v) name %q share %q",
						prefixA, groupA, groupedA, nameA, prefixB, groupB, groupedB, nameB, x)
				}
			}
		}
	})
}
