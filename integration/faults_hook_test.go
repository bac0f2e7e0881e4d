package integration

import (
	"context"
	"io"
	"net"

	"github.com/redis/rueidis"
)

// hookClient is a rueidis client whose Do calls go through hook, as
// rueidishook.WithHook would arrange (that module is not a dependency of
// this one; embedding the client is all it does). hook sees the command
// before it is sent, and decides whether to run it (run sends it to Redis
// for real) and what the caller gets back. A lost reply is a hook that runs
// the command and then returns errLostReply. The command must not be
// inspected after run: rueidis recycles it.
type hookClient struct {
	rueidis.Client
	hook func(ctx context.Context, cmd []string, run func() rueidis.RedisResult) rueidis.RedisResult
}

var _ rueidis.Client = (*hookClient)(nil)

func (c *hookClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return c.hook(ctx, cmd.Commands(), func() rueidis.RedisResult { return c.Client.Do(ctx, cmd) })
}

// errLostReply is what a caller sees when the connection dropped before the
// reply came back: not an error reply of Redis, so the command may have run.
var errLostReply = &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}

// lostReply is the result of a request whose reply was lost.
func lostReply() rueidis.RedisResult { return rueidis.NewErrorResult(errLostReply) }

// ran reports whether res is the reply of a script that ran: not the
// NOSCRIPT that an EVALSHA meets in an empty script cache, after which
// rueidis.Lua sends the script again with EVAL.
func ran(res rueidis.RedisResult) bool {
	re, ok := rueidis.IsRedisErr(res.Error())
	return !ok || !re.IsNoScript()
}

// The rlock scripts a hook can tell apart by their keys.
const (
	acquireScript = "acquire" // KEYS: hash, token counter, fences
	releaseScript = "release" // KEYS: hash, unlock channel, fences
)

// scriptOn names the rlock script that cmd runs on the lock whose hash is
// hash, or returns "" for any other command (renewals, ForceUnlock,
// inspection, other locks).
func scriptOn(cmd []string, hash string) string {
	return scriptOfKeys(cmd, hash, "3")
}

// scriptOfKeys is scriptOn for scripts that take numkeys keys: a kind's
// scripts take acquire.lua's and release.lua's first and may take more.
func scriptOfKeys(cmd []string, hash, numkeys string) string {
	if len(cmd) < 6 || (cmd[0] != "EVALSHA" && cmd[0] != "EVAL") || cmd[2] != numkeys || cmd[3] != hash {
		return ""
	}
	switch cmd[4] {
	case hash + ":token":
		return acquireScript
	case hash + ":unlock":
		return releaseScript
	}
	return ""
}
