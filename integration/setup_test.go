package integration

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// setup is one Redis deployment the Mutex suite runs against.
type setup struct {
	node *redistest.Node
}

// client returns a new rlock Client on its own rueidis connection, closed
// when t ends.
func (s setup) client(t *testing.T, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.New(s.node.Client(t), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// raw returns a plain rueidis client for inspecting Redis directly.
func (s setup) raw(t *testing.T) rueidis.Client {
	return s.node.Client(t)
}

// forEachSetup runs suite once for every Redis backend the harness offers,
// each on its own node.
func forEachSetup(t *testing.T, suite func(t *testing.T, s setup)) {
	for _, backend := range redistest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			suite(t, setup{node: redistest.New(t, redistest.Config{Backend: backend})})
		})
	}
}

// lockName derives a lock name unique to the running test.
func lockName(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", ":")
}
