package rlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// TestContendedAllocatesNothing: the check every fresh Lock that may wait
// makes while any channel of its Client is subscribed (or lingers) tells
// a lock whose channel lingers from one whose channel is not subscribed,
// and allocates nothing for either.
func TestContendedAllocatesNothing(t *testing.T) {
	c, err := New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	name := redistest.LockName(t)
	waited, other := &c.Mutex(name).lock, &c.Mutex(name+":other").lock
	w, err := c.subs.Subscribe(t.Context(), waited.keys.Value().Channel)
	require.NoError(t, err)
	w.Done(true) // its channel lingers

	require.True(t, waited.contended())
	require.False(t, other.contended())
	assert.Zero(t, testing.AllocsPerRun(100, func() { waited.contended() }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { other.contended() }))
}
