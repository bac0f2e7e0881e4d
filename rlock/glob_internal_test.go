package rlock

import (
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// FuzzGlob checks Locks' glob against path.Match, which reads the same
// syntax the same way on ASCII names without '/' (where its '*' stops and
// its '?' takes a rune): wherever both accept a pattern, they agree.
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"*", "x"}, {"a*b", "aXXb"}, {"?:[13]", "a:1"}, {"[^a]:?", "b:2"}, {"[a-c]*", "cab"}, {`x\*y`, "x*y"},
		{"*a*a*b", "aaaab"}, {"[z-a]", "m"}, {`[\]]`, "]"}, {"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if pattern == "" || strings.ContainsAny(pattern+name, "/") || !ascii(pattern+name) {
			return
		}
		want, err := path.Match(pattern, name)
		g, gerr := compileGlob(pattern)
		if err != nil || gerr != nil || hasReversedRange(pattern) {
			return
		}
		if got := g.match(name); got != want {
			t.Fatalf("glob %q on %q: %v, path.Match says %v", pattern, name, got, want)
		}
	})
}

// ascii reports whether s is printable ASCII.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// hasReversedRange reports whether pattern may hold a class range written
// high to low, which Redis (and the glob) reads as low to high and
// path.Match as empty.
func hasReversedRange(pattern string) bool {
	for i := 0; i+2 < len(pattern); i++ {
		if pattern[i+1] == '-' && pattern[i] > pattern[i+2] {
			return true
		}
	}
	return false
}

// TestGlobLinear: stars never backtrack into each other, so a pattern that
// is exponential for a naive matcher takes a moment.
func TestGlobLinear(t *testing.T) {
	g, err := compileGlob(strings.Repeat("*a", 30) + "*b")
	assert.NoError(t, err)
	name := strings.Repeat("a", 1<<12)
	start := time.Now()
	assert.False(t, g.match(name))
	assert.True(t, g.match(name+"b"))
	assert.Less(t, time.Since(start), 5*time.Second, "a bound for a hang, not a measure")
}
