package slot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCRC16(t *testing.T) {
	// The check value of CRC-16/XMODEM, from the Redis Cluster specification.
	assert.Equal(t, uint16(0x31C3), crc16("123456789"))
}

func TestOf(t *testing.T) {
	// Cases from the Redis Cluster specification's hash tag rules.
	cases := map[string]string{
		"{user1000}.following": "user1000",
		"foo{}{bar}":           "foo{}{bar}",
		"foo{{bar}}zap":        "{bar",
		"foo{bar}{zap}":        "bar",
		"plain":                "plain",
	}
	for key, hashed := range cases {
		assert.Equal(t, crc16(hashed)%Count, Of(key), "slot of %q hashes %q", key, hashed)
	}
	assert.Equal(t, uint16(12182), Of("foo"), "CLUSTER KEYSLOT foo")
}

// TestKeyIn: the key KeyIn names for a slot hashes to it, for slots all
// over the range (every one would take a while: each is a search).
func TestKeyIn(t *testing.T) {
	for s := uint16(0); s < Count; s += 257 {
		if key := KeyIn(s); Of(key) != s {
			t.Fatalf("KeyIn(%d) = %q, in slot %d", s, key, Of(key))
		}
	}
}
