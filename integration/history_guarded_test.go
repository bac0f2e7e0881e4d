package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCheckGuardedWrites shows that checkGuardedWrites catches a write
// through Do from an expired hold, both ways it can show, and passes the
// writes of live holds and the ones Do refused.
func TestCheckGuardedWrites(t *testing.T) {
	guarded := func(s *synth, owner string, token, start, end, prev int64, outcome string) {
		s.add(opGuarded, owner, token, start, end, outcome).Read = prev
	}
	cases := map[string]struct {
		build func(s *synth)
		want  string // a violation's text, "" for none
	}{
		"live holds": {func(s *synth) {
			s.acquire("p.c0.w0.0", 1, 0, 1)
			guarded(s, "p.c0.w0.0", 1, 2, 3, 0, outOK)
			s.acquire("c0.c0.w0.0", 2, 10, 11)
			guarded(s, "c0.c0.w0.0", 2, 12, 13, 1, outOK)
		}, ""},
		"a stale holder refused": {func(s *synth) {
			s.acquire("p.c0.w0.0", 1, 0, 1)
			s.acquire("c0.c0.w0.0", 2, 10, 11)
			guarded(s, "p.c0.w0.0", 1, 12, 13, 0, outFailed)
		}, ""},
		"landed after a newer grant": {func(s *synth) {
			s.acquire("p.c0.w0.0", 1, 0, 1)
			s.acquire("c0.c0.w0.0", 2, 10, 11)
			guarded(s, "p.c0.w0.0", 1, 12, 13, 0, outOK)
		}, "landed although"},
		"landed after a newer write": {func(s *synth) {
			s.acquire("p.c0.w0.0", 1, 0, 1)
			s.acquire("c0.c0.w0.0", 2, 10, 11)
			guarded(s, "c0.c0.w0.0", 2, 12, 13, 0, outOK)
			guarded(s, "p.c0.w0.0", 1, 5, 14, 2, outOK) // invoked before the grant, ran after the write
		}, "landed after one with token 2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s synth
			tc.build(&s)
			var v verdict
			checkGuardedWrites(s.ops, &v)
			if tc.want == "" {
				assert.Empty(t, v.violations)
				return
			}
			assert.Len(t, v.violations, 1, "%v", v.violations)
			assert.True(t, len(v.violations) == 1 && strings.Contains(v.violations[0], tc.want), "%v", v.violations)
		})
	}
}
