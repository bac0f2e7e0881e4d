package rlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestIsKindField checks that an Unlock finds its owner's field in the
// lock context it is given exactly when it is the one kindField makes:
// not another owner's, another kind's, or one with bytes more or less.
func TestIsKindField(t *testing.T) {
	c, other := &Client{id: "0b7c-uuid"}, &Client{id: "0b7d-uuid"}
	for _, n := range []uint64{0, 1, 35, 36, 1<<64 - 1} {
		o := &owner{n: n}
		for _, suffix := range []string{"", ":r", ":w"} {
			f := c.kindField(o, suffix)
			assert.True(t, c.isKindField(f, o, suffix), f)
			assert.False(t, c.isKindField(f, &owner{n: n + 1}, suffix), "another owner: %s", f)
			assert.False(t, other.isKindField(f, o, suffix), "another Client: %s", f)
			assert.False(t, c.isKindField(f+"x", o, suffix), "a byte more: %s", f)
			assert.False(t, c.isKindField(f[:len(f)-1], o, suffix), "a byte less: %s", f)
			if suffix != "" {
				assert.False(t, c.isKindField(f, o, ""), "another kind: %s", f)
			}
		}
	}
}
