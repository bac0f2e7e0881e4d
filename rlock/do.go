package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/slot"
	"github.com/rlock/rlock/lua"
)

// Writes that only a live holder can make. A lock protects data only while
// its holder knows it holds it, and a holder paused past its lease (GC, a
// starved CPU, a partition) does not know: it writes after another owner
// took the lock (Kleppmann's "How to do distributed locking"). Fencing
// tokens close that hole for stores that check them. For data kept in
// Redis beside the lock, Do closes it in Redis itself: the commands run in
// the same script as the check that the owner holds the lock (lua/do.lua),
// as etcd's transactions compare Mutex.IsOwner with their writes.
//
// A Do is one request of the owner's turn, like an acquire or a release
// (request.go): a call resent after a lost reply carries the request's
// first number, reserved before its first call, and the script does not run
// the commands again when an earlier call of the request ran them
// (ErrResultsLost then says that the results did not come back); a call
// whose caller gave up is settled before Do returns, by a call that fences
// every call of the request, so none runs later.

// ErrResultsLost is returned by Do when the commands ran, exactly once,
// but their replies were lost on the way back (a resend after a lost reply
// found that the lost call had run them). Read what you need again.
var ErrResultsLost = errors.New("rlock: the commands ran; their results were lost")

// maxWords bounds the words of one command: the script hands them to
// redis.pcall through unpack, and Lua's stack takes about 8000 values.
const maxWords = 7900

// unscriptable are the commands Redis refuses in a script (flagged
// noscript), or that would make no sense in one: transactions, pub/sub
// subscriptions, scripts and functions, connection and server state, and
// the server's administration and replication.
var unscriptable = map[string]bool{
	"MULTI": true, "EXEC": true, "DISCARD": true, "WATCH": true, "UNWATCH": true,
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true,
	"UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SUNSUBSCRIBE": true,
	"EVAL": true, "EVALSHA": true, "EVAL_RO": true, "EVALSHA_RO": true,
	"FCALL": true, "FCALL_RO": true, "SCRIPT": true, "FUNCTION": true,
	"WAIT": true, "WAITAOF": true, "MONITOR": true, "SYNC": true, "PSYNC": true,
	"CLIENT": true, "HELLO": true, "AUTH": true, "RESET": true, "SELECT": true,
	"QUIT": true, "SHUTDOWN": true, "ASKING": true, "READONLY": true, "READWRITE": true,
	"CONFIG": true, "ACL": true, "ROLE": true, "DEBUG": true, "MODULE": true, "LATENCY": true,
	"SAVE": true, "BGSAVE": true, "BGREWRITEAOF": true, "CLUSTER": true,
	"REPLICAOF": true, "SLAVEOF": true, "FAILOVER": true, "REPLCONF": true,
}

// Do runs cmds in Redis, in order and atomically with a check that ctx's
// owner still holds m there: between the check and the commands no other
// client can take the lock. If the owner does not hold it (its lease ran
// out, the key was deleted or overwritten, or another owner holds it),
// nothing runs, ctx's hold ends, and Do returns an error that errors.Is
// matches to ErrLockLost; ErrNotHeld when ctx never held m (or released
// it). A lock context whose hold ended stays refused after its owner took
// the lock again (a copy detached with context.WithoutCancel, say): the
// later hold is not the one ctx carries. A re-entrant holder may call it,
// and so may every goroutine that shares the lock context: their calls
// take turns.
//
// It returns one result per command, in order. As in MULTI/EXEC, a command
// that fails (WRONGTYPE, say) has its error in its own result, and the
// others still run: check each result's Error(). The results are the
// replies a script sees (RESP2: no maps or doubles), as EVAL returns them.
//
// On a Cluster every command must name its keys through its builder
// (Keys, for Arbitrary), and each key must be in the lock's slot: Key names
// such keys. A command that names none, or a key in another slot, makes Do
// fail with ErrInvalidArgument before anything is sent. So do: no
// commands, an empty one, a blocking one (BLPOP, XREAD BLOCK), one a
// script may not run (MULTI, SUBSCRIBE, EVAL, WAIT, ...), one of more than
// 7900 words, or one naming the lock's own keys. A nil or done ctx sends
// nothing either.
//
// The commands run at most once: a call resent after a lost reply does not
// run them again when the lost one had (Do then returns ErrResultsLost),
// and a Do whose ctx ended with the reply missing is settled before it
// returns, so that it never runs later; the error then says whether it ran.
// With WithReplicaAck the reply comes after the replicas acknowledged the
// writes, and too few make Do return the results with ErrNotReplicated:
// the commands ran, and a failover may lose them.
func (m *Mutex) Do(ctx context.Context, cmds ...rueidis.Completed) ([]rueidis.RedisMessage, error) {
	return m.engine().do(ctx, cmds, false)
}

// Key returns the name of a key of the caller's in the lock's Cluster slot:
// the lock's hash key, ":data:", and suffix. It shares the lock's hash tag,
// so Do may write it on a Cluster, and it is never one of rlock's own keys
// (they end in other suffixes). Any other key with the lock's hash tag
// (see the README's Redis layout) may be used as well. It returns "" for a
// handle whose calls fail (a nil one, or an invalid name).
func (m *Mutex) Key(suffix string) string {
	return m.engine().dataKey(suffix)
}

// Do is Mutex.Do for the fair lock.
func (f *FairMutex) Do(ctx context.Context, cmds ...rueidis.Completed) ([]rueidis.RedisMessage, error) {
	return f.engine().do(ctx, cmds, false)
}

// Key is Mutex.Key for the fair lock.
func (f *FairMutex) Key(suffix string) string {
	return f.engine().dataKey(suffix)
}

// Do is Mutex.Do under the write hold that ctx carries. Under a read hold
// alone (no write hold), it runs read-only commands only, under the check
// that the read hold lives: it fails with ErrInvalidArgument, sending
// nothing, when one of cmds may write, as rueidis marks it (a command
// built with Arbitrary and marked ReadOnly is taken at its word, and
// Redis runs what it is). Reads under a read hold see no
// write of another owner in between, since no other owner writes under
// the lock while a read hold lives.
func (rw *RWMutex) Do(ctx context.Context, cmds ...rueidis.Completed) ([]rueidis.RedisMessage, error) {
	w, r := rw.writeLock(), rw.readLock()
	if w.check(ctx) == nil {
		if _, writing := w.carried(ctx); !writing {
			if _, reading := r.carried(ctx); reading {
				return r.do(ctx, cmds, true)
			}
		}
	}
	return w.do(ctx, cmds, false)
}

// Key is Mutex.Key for the read-write lock.
func (rw *RWMutex) Key(suffix string) string {
	return rw.writeLock().dataKey(suffix)
}

// dataKey is Key for l.
func (l *lock) dataKey(suffix string) string {
	if l.c == nil || l.err != nil {
		return ""
	}
	return l.keys.Hash() + ":data:" + suffix
}

// do runs cmds for ctx's owner under the hold of l's kind it has; see
// Mutex.Do. readOnly allows only commands that write nothing.
func (l *lock) do(ctx context.Context, cmds []rueidis.Completed, readOnly bool) ([]rueidis.RedisMessage, error) {
	if err := l.check(ctx); err != nil {
		return nil, l.wrap(err)
	}
	if ctx.Err() != nil {
		return nil, l.wrap(fmt.Errorf("rlock: do: %w", l.doneDo(ctx)))
	}
	words, err := l.commandWords(cmds, readOnly)
	if err != nil {
		return nil, l.wrap(fmt.Errorf("rlock: do: %w", err))
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return nil, l.wrap(fmt.Errorf("rlock: do: %w", ErrNotHeld))
	}
	tr := l.traceDo(ctx, len(cmds))
	res, err := l.guarded(ctx, o, len(cmds), words, &tr)
	tr.end(ctx, l, err)
	if err != nil {
		return res, l.wrap(fmt.Errorf("rlock: do: %w", err))
	}
	return res, nil
}

// doneDo is why a Do with the done ctx sends nothing: ctx's error, which
// matches ErrNotHeld too when ctx is a lock context of l whose hold its
// final Unlock ended.
func (l *lock) doneDo(ctx context.Context) error {
	err := doneErr(ctx)
	if o, ok := ownerFrom(ctx); ok {
		h := carriedHold(ctx, l.c, l.holdID(o))
		if h != nil && !h.active() && h.life.Cause() == context.Canceled {
			return fmt.Errorf("%w (%w)", ErrNotHeld, err)
		}
	}
	return err
}

// guarded is do's request, in owner o's turn: one call of do.lua, resent
// within the retry timeout after a lost reply, and settled when the reply
// is still missing at the end. A ctx that carries an earlier hold of the
// owner than the turn's (one detached from a lock context by
// context.WithoutCancel, whose hold ended) writes nothing: the turn's hold
// is a later one, which ctx never carried, as for Unlock (unlockTurn).
func (l *lock) guarded(ctx context.Context, o *owner, n int, words []string, tr *doTrace) ([]rueidis.RedisMessage, error) {
	id, carried := l.boundHold(ctx, o)
	t, err := l.c.take(ctx, id)
	if err != nil {
		return nil, err
	}
	defer l.c.give(t)
	h := t.activeHold()
	switch {
	case t.count == 0:
		return nil, ErrNotHeld
	case carried != nil && carried != t.hold && errors.Is(carried.life.Cause(), ErrLockLost):
		return nil, carried.life.Cause()
	case carried != nil && carried != t.hold:
		return nil, ErrNotHeld
	case h == nil && t.hold != nil && errors.Is(t.hold.life.Cause(), ErrLockLost):
		return nil, t.hold.life.Cause()
	case h == nil:
		return nil, ErrLockLost
	case ctx.Err() != nil:
		return nil, doneErr(ctx)
	}
	tr.token = h.token
	first := strconv.FormatUint(l.c.seq.Add(1), 10)
	rctx, cancel := context.WithTimeout(ctx, l.c.cfg.retryTimeout)
	res, err := l.run(rctx, t, h, l.doCall(t.id.field, first, n, words), l.c.cfg.replicas > 0)
	cancel()
	if err == nil || t.unsettled == 0 {
		return res, err
	}
	sctx, cancel := l.c.detached(ctx)
	defer cancel()
	_, serr := l.run(sctx, t, h, l.doCall(t.id.field, first, 0, nil), false)
	if ctx.Err() != nil {
		err = doneErr(ctx)
	}
	switch {
	case errors.Is(serr, ErrResultsLost):
		return nil, fmt.Errorf("%w; %w", err, serr)
	case errors.Is(serr, errNotRun):
		serr = errors.New("the commands did not run")
	default:
		serr = fmt.Errorf("the commands may have run: settling: %w", serr)
	}
	return nil, fmt.Errorf("%w; %w", err, serr)
}

// errNotRun is the settling call's answer that no call of the request ran.
var errNotRun = errors.New("rlock: the commands did not run")

// run sends one call of a Do request in turn t, whose turn the caller has,
// for hold h, and reads its answer. With acked it waits for the Client's
// replicas (WithReplicaAck).
func (l *lock) run(ctx context.Context, t *turn, h *hold, call scriptCall, acked bool) ([]rueidis.RedisMessage, error) {
	reply, acks, _, err := l.c.exchangeMessage(ctx, t, lua.Do, call, acked)
	if err != nil {
		return nil, err
	}
	code, results, err := parseDo(reply)
	switch {
	case err != nil:
		return nil, err
	case code == lua.Ran && acked && acks < int64(l.c.cfg.replicas):
		return results, fmt.Errorf("%w: the commands ran; %d of %d replicas acknowledged them within %v", ErrNotReplicated, acks, l.c.cfg.replicas, l.c.cfg.replicaTimeout)
	case code == lua.Ran:
		return results, nil
	case code == lua.RanEarlier:
		return nil, ErrResultsLost
	case code == lua.NotRun:
		return nil, errNotRun
	case code == lua.Stale:
		return nil, errStale
	}
	h.finish(ErrLockLost)
	if call.args[4] != "0" {
		// The answering call (exchange stamps call.args) superseded one
		// whose reply was lost, which may have run before the loss.
		return nil, fmt.Errorf("%w: Redis says the owner does not hold it; an earlier call whose reply was lost may have run the commands", ErrLockLost)
	}
	return nil, fmt.Errorf("%w: Redis says the owner does not hold it; nothing ran", ErrLockLost)
}

// doCall is do.lua's call for owner field: the request's first number,
// and its n commands as words (n 0: the settling call).
func (l *lock) doCall(field, first string, n int, words []string) scriptCall {
	k := l.keys.Value()
	args := make([]string, 0, 6+len(words))
	args = append(args, field, "", first, strconv.Itoa(n), "", l.c.fenceMs)
	return scriptCall{keys: []string{k.Hash, k.Fence}, args: append(args, words...)}
}

// parseDo reads do.lua's reply: {code, results} or {code, 0}.
func parseDo(reply rueidis.RedisMessage) (lua.Code, []rueidis.RedisMessage, error) {
	arr, err := reply.ToArray()
	if err != nil || len(arr) != 2 {
		return 0, nil, fmt.Errorf("rlock: unexpected do reply %v", reply)
	}
	code, err := arr[0].AsInt64()
	switch {
	case err != nil:
	case lua.Code(code) == lua.Ran:
		results, err := arr[1].ToArray()
		if err == nil {
			return lua.Ran, results, nil
		}
	case lua.Code(code) == lua.RanEarlier, lua.Code(code) == lua.NotRun, lua.Code(code) == lua.NotHeld, lua.Code(code) == lua.Stale:
		return lua.Code(code), nil, nil
	}
	return 0, nil, fmt.Errorf("rlock: unexpected do reply %v", reply)
}

// commandWords checks cmds for Do and returns them as do.lua's ARGV takes
// them: each command's number of words, then its words. readOnly refuses
// commands that may write.
func (l *lock) commandWords(cmds []rueidis.Completed, readOnly bool) ([]string, error) {
	if len(cmds) == 0 {
		return nil, fmt.Errorf("%w: no commands", ErrInvalidArgument)
	}
	cluster := l.c.rc.Mode() == rueidis.ClientModeCluster
	k := l.keys.Value()
	own := [...]string{k.Hash, k.Token, k.Fence, k.Queue}
	lockSlot := slot.Of(k.Hash)
	var words []string
	for i := range cmds {
		cmd := &cmds[i]
		if cmd.IsEmpty() {
			return nil, fmt.Errorf("%w: command %d is empty", ErrInvalidArgument, i)
		}
		w := cmd.Commands()
		name := strings.ToUpper(w[0])
		switch s := cmd.Slot(); {
		case len(w) > maxWords:
			return nil, fmt.Errorf("%w: command %d (%s) has %d words, more than %d", ErrInvalidArgument, i, name, len(w), maxWords)
		case cmd.IsBlock():
			return nil, fmt.Errorf("%w: command %d (%s) blocks, which a script cannot", ErrInvalidArgument, i, name)
		case unscriptable[name]:
			return nil, fmt.Errorf("%w: command %d (%s) cannot run in a script", ErrInvalidArgument, i, name)
		case readOnly && !cmd.IsReadOnly():
			return nil, fmt.Errorf("%w: command %d (%s) may write, and a read hold runs only read-only commands", ErrInvalidArgument, i, name)
		case cluster && s >= slot.Count:
			return nil, fmt.Errorf("%w: command %d (%s) names no key, so its slot cannot be checked against the lock's on a Cluster", ErrInvalidArgument, i, name)
		case cluster && s != lockSlot:
			return nil, fmt.Errorf("%w: command %d (%s) is in slot %d, the lock in %d: name its keys with the lock's hash tag (Key)", ErrInvalidArgument, i, name, s, lockSlot)
		}
		for _, word := range w[1:] {
			for _, key := range own {
				if word == key {
					return nil, fmt.Errorf("%w: command %d (%s) names the lock's own key %s", ErrInvalidArgument, i, name, key)
				}
			}
		}
		words = append(words, strconv.Itoa(len(w)))
		words = append(words, w...)
	}
	return words, nil
}

// DoHooks is what a Hooks implements, besides Hooks, to observe Do calls
// (guarded writes). It is separate so that Hooks written before Do need
// not change: the engine calls it when the Client's Hooks implement it.
// Its methods run on the caller's goroutine, and must be quick, safe for
// concurrent use, and not call back into the lock.
type DoHooks interface {
	// DoStart is called when a Do begins to send; as AcquireStart, the
	// context it returns goes to the DoEnd of the same call. A Do refused
	// before it sends (bad commands, a done context) is not reported.
	DoStart(ctx context.Context, l LockRef) context.Context
	// DoEnd is called once when the Do returns.
	DoEnd(ctx context.Context, e DoEnd)
}

// The outcomes of a Do, beside OutcomeNotHeld and the outcomes of a call
// (canceled, deadline_exceeded, closed, error).
const (
	OutcomeRan  Outcome = "ran"  // the holder's commands ran
	OutcomeLost Outcome = "lost" // Redis said the owner no longer held the lock: nothing ran
)

// DoEnd describes one Do call.
type DoEnd struct {
	LockRef
	Outcome  Outcome
	Err      error
	Duration time.Duration
	Commands int   // commands asked to run
	Token    int64 // the hold's fencing token; 0 when the owner had no hold here
}

// doTrace follows one Do for DoHooks; its zero value reports nothing.
type doTrace struct {
	hooks    DoHooks
	ctx      context.Context
	start    time.Time
	commands int
	token    int64
}

// traceDo begins following a Do of n commands by ctx.
func (l *lock) traceDo(ctx context.Context, n int) doTrace {
	dh, ok := l.c.cfg.hooks.(DoHooks)
	if !ok {
		return doTrace{}
	}
	return doTrace{hooks: dh, ctx: dh.DoStart(ctx, l.ref()), start: time.Now(), commands: n}
}

// end reports the Do's result, err, for the caller's ctx.
func (t *doTrace) end(ctx context.Context, l *lock, err error) {
	if t.hooks == nil {
		return
	}
	e := DoEnd{LockRef: l.ref(), Outcome: callOutcome(ctx, err), Err: err, Duration: time.Since(t.start), Commands: t.commands, Token: t.token}
	switch {
	case err == nil:
		e.Outcome = OutcomeRan
	case errors.Is(err, ErrNotHeld):
		e.Outcome = OutcomeNotHeld
	case errors.Is(err, ErrLockLost):
		e.Outcome = OutcomeLost
	}
	t.hooks.DoEnd(t.ctx, e)
}
