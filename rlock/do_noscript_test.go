package rlock_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestDoRefusesNoscriptCommands: Do refuses, with ErrInvalidArgument and
// sending nothing, a command a script may not run: Redis would refuse
// these in the script (COMMAND flags them noscript) while the others ran,
// and Do would report success.
func TestDoRefusesNoscriptCommands(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	mu := newRlock(t, rc).Mutex(redistest.LockName(t))
	key := mu.Key("n")
	ctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	defer mu.Unlock(ctx)
	b := rc.B()

	for what, cmd := range map[string]rueidis.Completed{
		"CONFIG GET": b.ConfigGet().Parameter("maxmemory").Build(),
		"ROLE":       b.Role().Build(),
		"BGSAVE":     b.Bgsave().Build(),
		"ACL WHOAMI": b.AclWhoami().Build(),
	} {
		res, err := mu.Do(ctx, b.Incr().Key(key).Build(), cmd)
		if !assert.ErrorIs(t, err, rlock.ErrInvalidArgument, "%s cannot run in a script: Do must refuse it before sending", what) && len(res) == 2 {
			t.Logf("%s: Do returned err=%v, result of %s: %v", what, err, what, res[1].Error())
		}
	}
	assert.Empty(t, get(t, rc, key), "no refused Do ran its commands")
}
