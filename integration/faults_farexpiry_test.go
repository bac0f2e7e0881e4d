package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestFaultFarExpiry waits for a lock whose key someone set to expire in
// the year 3000 (EXPIREAT, a common stand-in for "never"): a PTTL longer
// than a time.Duration can hold. The waiter must sleep until its wait runs
// out, trying again only then, rather than read the PTTL as negative,
// wrapped around, and spin on the acquire script.
func TestFaultFarExpiry(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	hash := lockKeys(name).Hash
	require.NoError(t, raw.Do(t.Context(), raw.B().Hset().Key(hash).FieldValue().FieldValue("someone", "1").Build()).Error())
	year3000 := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	require.NoError(t, raw.Do(t.Context(), raw.B().Expireat().Key(hash).Timestamp(year3000).Build()).Error())
	mu := newRlock(t, node.Client(t)).Mutex(name)

	before := redistest.ScriptCalls(t, raw)
	_, ok, err := mu.TryLock(t.Context(), 300*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "the lock is held")
	// Two attempts, at the start and the end of the wait; a fresh script
	// cache adds an EVALSHA that meets NOSCRIPT. A spinning waiter makes
	// thousands.
	assert.Less(t, redistest.ScriptCalls(t, raw)-before, 10, "the waiter does not spin on the acquire script")
}
