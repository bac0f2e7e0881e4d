package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// A write that no owner's turn orders (ForceUnlock, Semaphore's
// TrySetPermits, AddPermits and ExtendPermit, CountDownLatch's
// TrySetCount) is one call of a script that runs at most once
// (lua/once.lua). The call has a name of its own, and Redis keeps its
// reply under a key named after it, beside the resource's fences, for the
// fence life. When the reply does not come (lost, or the caller's ctx
// ended first), the Client voids that key before the caller returns: a
// copy that reaches Redis after that does nothing, and the reply kept by
// one that ran before is the caller's answer. So such a call applies
// before it returns, or never, and its caller learns which, unless Redis
// stays out of reach for the retry timeout (ErrOutcomeUnknown), as with a
// request. Send and void take a retry timeout each at most, together less
// than the fence life, so a kept reply is still there for the void.

// errNoAnswer is once's error for a script that answered nil: a
// semaphore's permits out of range (lua/semaphore_permits.lua).
var errNoAnswer = errors.New("rlock: no answer")

// once runs s with keys and args, to which it adds the call's answer key,
// named after fences (the resource's fences key), and the fence life, and
// returns the number it answered. A call whose reply did not come is
// voided (settled) within the retry timeout, ctx's end notwithstanding;
// its answer is then the one Redis kept, or, when it never ran, the
// call's error.
func (r *resource) once(ctx context.Context, s *lua.Script, fences string, keys, args []string) (int64, error) {
	answer := fences + ":" + r.c.id + "!" + strconv.FormatUint(r.c.seq.Add(1), 10)
	sctx, cancel := context.WithTimeout(ctx, r.c.cfg.retryTimeout)
	n, err := s.Exec(sctx, r.c.rc, append(keys, answer), append(args, r.c.fenceMs)).AsInt64()
	cancel()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, errNoAnswer
	case err == nil || !inTransit(err):
		return n, err // a script's error reply: it wrote nothing
	}
	kept, verr := r.void(ctx, answer)
	switch {
	case verr != nil:
		return 0, fmt.Errorf("%w; %w: settling: %w", err, ErrOutcomeUnknown, verr)
	case kept == "void":
		return 0, err // it never ran, and never will
	case kept == "nil":
		return 0, errNoAnswer
	}
	return strconv.ParseInt(kept, 10, 64)
}

// void voids the call whose answer key is answer, and returns what Redis
// says of it: "void", or the call's answer. It resends until Redis
// answers, the retry timeout from now runs out, or the rueidis client is
// closing.
func (r *resource) void(ctx context.Context, answer string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.c.cfg.retryTimeout)
	defer cancel()
	var pause backoff
	defer pause.stop()
	for {
		kept, err := lua.Void.Exec(ctx, r.c.rc, []string{answer}, []string{r.c.fenceMs}).ToString()
		if err == nil || !resendable(err, false) || errors.Is(err, rueidis.ErrClosing) || !pause.wait(ctx) {
			return kept, err
		}
	}
}
