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

// TestClientIDKeepsFieldsShort checks what newClientID promises: ids that
// differ, 22 characters with no ':' (the end of the id in a field), and a
// field that fits in 32 bytes up to the 36^9-th owner, one byte more past
// it.
func TestClientIDKeepsFieldsShort(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newClientID()
		assert.Len(t, id, 22)
		assert.NotContains(t, id, ":")
		assert.False(t, seen[id], "an id drawn twice: %s", id)
		seen[id] = true
	}
	c := &Client{id: newClientID()}
	const most = 101559956668415 // 36^9-1: the last owner number with 9 digits in base 36
	assert.Len(t, c.field(&owner{n: most}), 32)
	assert.Len(t, c.field(&owner{n: most + 1}), 33)
}
