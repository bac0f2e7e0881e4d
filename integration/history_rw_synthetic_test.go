package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// look is a reader's hold from from to to: acquire, read the counter,
// release.
func (s *synth) look(owner string, token, from, to, read int64) {
	s.acquire(owner, token, from, from+1)
	s.add(opRead, owner, token, from+2, from+3, outOK).Read = read
	s.release(owner, token, to, to+1, outOK)
}

// TestRWHistoryChecks feeds the reader-writer checks histories with
// planted bugs, and expects each reported; the clean ones must pass.
// Owners are "<proc>.<client>.<worker>.<iteration>", readers' workers
// "r…".
func TestRWHistoryChecks(t *testing.T) {
	cases := []struct {
		name    string
		history func(s *synth)
		want    []string // fragments of expected violations; none: a clean history
	}{
		{"ReadersOverlap", func(s *synth) {
			s.hold("p.c0.w0.0", 5, 0, 10, 0)
			s.look("p.c0.r0.0", 5, 20, 40, 1)
			s.look("p.c1.r0.0", 5, 25, 35, 1)
			s.hold("p.c1.w0.0", 6, 50, 60, 1)
		}, nil},
		{"WriterAmongReaders", func(s *synth) {
			s.look("p.c0.r0.0", 5, 0, 30, 0)
			s.hold("p.c1.w0.0", 6, 10, 20, 0)
		}, []string{"overlap"}},
		{"WritersOverlap", func(s *synth) {
			s.hold("p.c0.w0.0", 5, 0, 20, 0)
			s.hold("p.c1.w0.0", 6, 10, 30, 1)
		}, []string{"overlap"}},
		{"ReadTokenBehindWrite", func(s *synth) {
			s.hold("p.c0.w0.0", 7, 0, 10, 0)
			s.look("p.c0.r0.0", 5, 20, 30, 1)
		}, []string{"read token"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &synth{}
			tc.history(s)
			v := checkRWHistory(s.ops, storeState{log: s.log, counter: s.counter})
			if len(tc.want) == 0 {
				assert.Empty(t, v.violations)
				return
			}
			for _, frag := range tc.want {
				assert.True(t, strings.Contains(strings.Join(v.violations, "\n"), frag), "want %q in %v", frag, v.violations)
			}
		})
	}
}
