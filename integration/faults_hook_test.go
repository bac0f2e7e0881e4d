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

// The rlock scripts a hook can tell apart by their keys: every kind's
// scripts take the same five (the request layout of rlock's acquireCall
// and releaseCall).
const (
	acquireScript = "acquire" // KEYS: hash, token counter, fences, queue, unlock channel
	releaseScript = "release" // KEYS: hash, unlock channel, fences, token counter, queue
)

// scriptOn names the rlock script that cmd runs on the lock whose hash is
// hash, or returns "" for any other command (renewals, ForceUnlock,
// inspection, other locks).
func scriptOn(cmd []string, hash string) string {
	if len(cmd) < 6 || (cmd[0] != "EVALSHA" && cmd[0] != "EVAL") || cmd[2] != "5" || cmd[3] != hash {
		return ""
	}
	switch cmd[4] {
	case hash + ":token", hash + ":permits": // a lock's fencing counter; a semaphore's permits
		return acquireScript
	case hash + ":unlock":
		return releaseScript
	}
	return ""
}

// waitingOn is scriptOn, but knows only the acquire calls of a caller that
// waits on the unlock channel (ARGV[7] '1', after the command, SHA, key
// count and five keys): the calls that mark a lock, or queue a fair
// lock's waiter.
func waitingOn(cmd []string, hash string) string {
	if scriptOn(cmd, hash) != acquireScript || len(cmd) < 15 || cmd[14] != "1" {
		return ""
	}
	return acquireScript
}
