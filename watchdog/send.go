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

// batchReply is what a round learnt of one batch: the renew script's
// answer per key (1 renewed, 0 gone), or why it failed.
type batchReply struct {
	renewed []int64
	err     error
}

// send runs the renew script once per batch and returns the replies in
// batch order. The batches go out in chunks of at most chunkBatches, every
// chunk at once on the pipeline and each bounded by half a period. Redis
// answers in order, so when it is too slow for the whole round the chunks
// it got through still count, and only the rest are retried: a single call
// would fail the round whole, and retrying it all with the next holds due
// would make every round bigger until the holds' deadlines passed.
func (w *Watchdog) send(ctx context.Context, execs []rueidis.LuaExec) []batchReply {
	replies := make([]batchReply, len(execs))
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
// bounded by half a period, puts the replies in out, and tells wg:
// EVALSHA, then EVAL for the batches Redis answered NOSCRIPT (after a
// restart or SCRIPT FLUSH). Lua.ExecMulti would load the script on every
// node before every round instead, a second round trip each time. The
// script is owner-checked, so rueidis may resend it after a lost reply
// (exec says when). A batch of several keys that a Cluster turned away because its slot is
// migrating (ASK, TRYAGAIN: some of its keys are on the slot's new node
// already) is sent again one key per call, which rueidis redirects: each
// key is renewed where it is.
func (w *Watchdog) sendChunk(ctx context.Context, execs []rueidis.LuaExec, out []batchReply, wg *sync.WaitGroup) {
	defer wg.Done()
	ctx, cancel := context.WithTimeout(ctx, w.bound)
	defer cancel()
	results := w.exec(ctx, execs, !w.cluster)
	for i, r := range results {
		renewed, err := r.AsIntSlice()
		out[i] = batchReply{renewed, lua.Renew.MapError(err)} // a script error names its file and line
		if len(execs[i].Keys) > 1 && migrating(err) {
			out[i] = w.oneByOne(ctx, execs[i])
		}
	}
}

// exec runs the renew script once per exec, pipelined: EVALSHA, then EVAL
// for those Redis answered NOSCRIPT. retry lets rueidis resend a call
// after a lost reply, and after a TRYAGAIN, until ctx is done: not a
// Cluster's batches, whose TRYAGAIN (a migration that spread their keys)
// must come back for oneByOne; a call that fails is retried on the next
// tick all the same.
func (w *Watchdog) exec(ctx context.Context, execs []rueidis.LuaExec, retry bool) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, 0, len(execs))
	for _, e := range execs {
		cmd := lua.Renew.EvalSHA(w.rc.B(), e.Keys, e.Args)
		if retry {
			cmd = cmd.ToRetryable()
		}
		cmds = append(cmds, cmd)
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
		cmd := lua.Renew.Eval(w.rc.B(), execs[i].Keys, execs[i].Args)
		if retry {
			cmd = cmd.ToRetryable()
		}
		cmds = append(cmds, cmd)
	}
	for j, r := range w.rc.DoMulti(ctx, cmds...) {
		replies[missing[j]] = r
	}
	return replies
}

// oneByOne renews the keys of batch e one per call, and gathers the
// answers as the batch's.
func (w *Watchdog) oneByOne(ctx context.Context, e rueidis.LuaExec) batchReply {
	lease := e.Args[0]
	single := make([]rueidis.LuaExec, len(e.Keys))
	for k, key := range e.Keys {
		single[k] = rueidis.LuaExec{Keys: []string{key}, Args: []string{lease, e.Args[k+1]}}
	}
	reply := batchReply{renewed: make([]int64, 0, len(e.Keys))}
	for _, r := range w.exec(ctx, single, true) {
		renewed, err := r.AsIntSlice()
		if err != nil || len(renewed) != 1 {
			return batchReply{err: lua.Renew.MapError(err)}
		}
		reply.renewed = append(reply.renewed, renewed[0])
	}
	return reply
}

// migrating reports whether err is a Cluster's refusal of a call whose
// keys a slot migration has spread over two nodes.
func migrating(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	_, asked := re.IsAsk()
	return asked || re.IsTryAgain()
}
