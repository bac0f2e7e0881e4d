package watchdog

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// send runs the renew script once per batch, every batch pipelined in one
// call: EVALSHA, then EVAL for the batches Redis answered NOSCRIPT (after a
// restart or SCRIPT FLUSH). Lua.ExecMulti would load the script on every
// node before every round instead, a second round trip each time. The
// script is owner-checked, so rueidis may resend it after a lost reply.
func (w *Watchdog) send(ctx context.Context, execs []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, 0, len(execs))
	for _, e := range execs {
		cmds = append(cmds, w.rc.B().Evalsha().Sha1(lua.RenewSource.SHA1).
			Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build().ToRetryable())
	}
	replies := w.rc.DoMulti(ctx, cmds...)
	var missing []int
	for i, r := range replies {
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return replies
	}
	cmds = cmds[:0]
	for _, i := range missing {
		e := execs[i]
		cmds = append(cmds, w.rc.B().Eval().Script(lua.RenewSource.Text).
			Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build().ToRetryable())
	}
	for j, r := range w.rc.DoMulti(ctx, cmds...) {
		replies[missing[j]] = r
	}
	return replies
}
