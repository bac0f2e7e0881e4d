package redisserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rlock/rlock/internal/redisserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFindStartsAChildProcess: without REDIS_ADDR, Find starts
// redis-server, which answers until Close stops it.
func TestFindStartsAChildProcess(t *testing.T) {
	if !redisserver.HaveRedisServer() {
		t.Skip("redis-server is not on PATH")
	}
	t.Setenv("REDIS_ADDR", "")
	srv, err := redisserver.Find(t.Context())
	require.NoError(t, err)
	assert.Equal(t, redisserver.BackendProcess, srv.Backend())
	require.NoError(t, redisserver.Ping(t.Context(), srv.Addr()))
	require.NoError(t, srv.Close())
	assert.Error(t, redisserver.Ping(t.Context(), srv.Addr()), "a closed server answers nothing")
}

// TestFindUsesRedisAddr: with REDIS_ADDR set, Find starts nothing and
// Close stops nothing.
func TestFindUsesRedisAddr(t *testing.T) {
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	srv, err := redisserver.Find(t.Context())
	require.NoError(t, err)
	assert.Equal(t, redisserver.BackendExternal, srv.Backend())
	assert.Equal(t, "127.0.0.1:1", srv.Addr())
	assert.NoError(t, srv.Close())
}
