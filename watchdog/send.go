package watchdog

import (
	"context"
	"sync"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// chunkBatches is the most batches one pipelined call of a round carries.
const chunkBatches = 32

// roundBound divides the period into the bound on a round. A hold's local
// deadline is three periods after its last confirmed renewal (less a drift
// allowance): with rounds bounded by a whole period, a round that hung to
// its bound left room for one retry before the deadline; bounded by half,
// a hold whose Redis stalls briefly gets three more tries.
const roundBound = 2

// send runs the renew script once per batch and returns the replies in
// batch order. The batches go out in chunks of at most chunkBatches, every
// chunk at once on the pipeline and each bounded by half a period. Redis answers
// in order, so when it is too slow for the whole round the chunks it got
// through still count, and only the rest are retried: a single call would
// fail the round whole, and retrying it all with the next holds due would
// make every round bigger until the holds' deadlines passed.
func (w *Watchdog) send(ctx context.Context, execs []rueidis.LuaExec) []rueidis.RedisResult {
	replies := make([]rueidis.RedisResult, len(execs))
	var wg sync.WaitGroup
	for start := 0; start < len(execs); start += chunkBatches {
		chunk := execs[start:min(start+chunkBatches, len(execs))]
		out := replies[start : start+len(chunk)]
		wg.Add(1)
		go w.sendChunk(ctx, chunk, out, &wg)
	}
	wg.Wait()
	return replies
}

// sendChunk runs the renew script once per batch, pipelined in one call
// bounded by half a period, puts the replies in out, and tells wg: EVALSHA,
// then EVAL for the batches Redis answered NOSCRIPT (after a restart or
// SCRIPT FLUSH). Lua.ExecMulti would load the script on every node before
// every round instead, a second round trip each time. The script is
// owner-checked, so rueidis may resend it after a lost reply.
func (w *Watchdog) sendChunk(ctx context.Context, execs []rueidis.LuaExec, out []rueidis.RedisResult, wg *sync.WaitGroup) {
	defer wg.Done()
	ctx, cancel := context.WithTimeout(ctx, w.bound)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(execs))
	for _, e := range execs {
		cmds = append(cmds, lua.Renew.EvalSHA(w.rc.B(), e.Keys, e.Args).ToRetryable())
	}
	replies := w.rc.DoMulti(ctx, cmds...)
	var missing []int
	for i, r := range replies {
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			missing = append(missing, i)
		}
	}
	copy(out, replies)
	if len(missing) == 0 {
		return
	}
	cmds = cmds[:0]
	for _, i := range missing {
		cmds = append(cmds, lua.Renew.Eval(w.rc.B(), execs[i].Keys, execs[i].Args).ToRetryable())
	}
	for j, r := range w.rc.DoMulti(ctx, cmds...) {
		out[missing[j]] = r
	}
}
