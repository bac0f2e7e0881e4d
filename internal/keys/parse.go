package keys

import "strings"

// The kinds of lock, as Parse names them: one per key set of kinds.go.
const (
	KindMutex     = "mutex"     // New
	KindRWMutex   = "rwmutex"   // NewRW
	KindFairMutex = "fairmutex" // NewFair
	KindSemaphore = "semaphore" // NewSemaphore
	KindLatch     = "latch"     // NewLatch
)

// kindSuffixes are the keys after a name's tag that say a lock of a kind
// is there: its hash, and for a fair lock its queue, for a semaphore its
// permits (which outlive every holder). A lock's other keys (its channel,
// its fencing counter, its fences) are left out: a counter stays after the
// lock is gone, and fences come and go with requests.
var kindSuffixes = map[string]string{
	"":                   KindMutex,
	":rw":                KindRWMutex,
	":fair":              KindFairMutex,
	":fair:queue":        KindFairMutex,
	":semaphore":         KindSemaphore,
	":semaphore:permits": KindSemaphore,
	":latch":             KindLatch,
}

// Parse is the inverse of the key sets' constructors: it returns the name
// and kind of the lock (made by New, NewRW, NewFair, NewSemaphore or
// NewLatch under prefix) that key says is there, and false for any other
// key. The keys that say a lock is there are its Hash, a fair lock's Queue
// and a semaphore's permits (its Token); see kindSuffixes. A grouped lock's
// key is ParseGrouped's.
func Parse(prefix, key string) (name, kind string, ok bool) {
	name, rest, ok := parseTag(prefix, key)
	if !ok {
		return "", "", false
	}
	kind, ok = kindSuffixes[rest]
	if !ok || CheckName(name) != nil {
		return "", "", false
	}
	return name, kind, true
}

// ParseGrouped returns the group and name of the grouped lock whose Hash
// (NewGrouped under prefix) key is, and false for any other key.
func ParseGrouped(prefix, key string) (group, name string, ok bool) {
	group, rest, ok := parseTag(prefix, key)
	if !ok || !strings.HasPrefix(rest, "/") || CheckGroup(group) != nil {
		return "", "", false
	}
	name, ok = unescape(rest[1:], ':')
	if !ok || CheckName(name) != nil {
		return "", "", false
	}
	return group, name, true
}

// parseTag splits key, made under prefix, into the decoded contents of its
// hash tag and what follows the tag.
func parseTag(prefix, key string) (tag, rest string, ok bool) {
	after, ok := strings.CutPrefix(key, prefix+"{")
	if !ok || CheckPrefix(prefix) != nil {
		return "", "", false
	}
	enc, rest, ok := strings.Cut(after, "}")
	if !ok {
		return "", "", false
	}
	tag, ok = unescape(enc, '}')
	return tag, rest, ok
}

// unescape is the inverse of escape(s, special): false when s is not what
// escape makes (an escape of another byte, a lower-case or broken escape,
// or special itself unescaped), so that every key parses to at most one
// lock and that lock's key is key.
func unescape(s string, special byte) (string, bool) {
	if strings.IndexByte(s, special) >= 0 {
		return "", false
	}
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		switch s[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case escaped(special):
			b.WriteByte(special)
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// escaped is the two hex digits escape writes after '%' for c.
func escaped(c byte) string {
	const hex = "0123456789ABCDEF"
	return string([]byte{hex[c>>4], hex[c&0xF]})
}
