package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// A write that no owner's turn orders (ForceUnlock, Semaphore's
// TrySetPermits, AddPermits and ExtendPermit, CountDownLatch's
// TrySetCount) is one call of a script that runs at most once per call
// (lua/once.lua). The call carries a name of its own; Redis keeps its
// reply under it, in the resource's fences. When the reply does not come
// (lost, or the caller's ctx ended first), the Client voids the name
// before the caller returns: a copy that reaches Redis after that does
// nothing, and the reply kept by one that ran before is the caller's
// answer. So such a call applies before it returns, or never, and its
// caller learns which, unless Redis stays out of reach for the retry
// timeout (ErrOutcomeUnknown), as with a request.

// errNoAnswer is once's error for a script that answered nil: a
// semaphore's permits out of range (lua/semaphore_permits.lua).
var errNoAnswer = errors.New("rlock: no answer")

// once runs s with keys, whose last is the resource's fences hash, and
// args, to which it adds the call's name and the fence life, and returns
// the number it answered. A call whose reply did not come is voided
// (settled) within the retry timeout, ctx's end notwithstanding; its
// answer is then the one Redis kept, or, when it never ran, the call's
// error.
func (r *resource) once(ctx context.Context, s *lua.Script, keys, args []string) (int64, error) {
	name := r.c.id + "!" + strconv.FormatUint(r.c.seq.Add(1), 10)
	n, err := s.Exec(ctx, r.c.rc, keys, append(args, name, r.c.fenceMs)).AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, errNoAnswer
	case err == nil || !inTransit(err):
		return n, err // a script's error reply: it wrote nothing
	}
	answer, verr := r.void(ctx, keys[len(keys)-1], name)
	switch {
	case verr != nil:
		return 0, fmt.Errorf("%w; %w: settling: %w", err, ErrOutcomeUnknown, verr)
	case answer == "void":
		return 0, err // it never ran, and never will
	case answer == "nil":
		return 0, errNoAnswer
	}
	return strconv.ParseInt(answer, 10, 64)
}

// void voids the call named name, whose answer Redis keeps in fences,
// and returns what Redis says of it: "void", or the call's answer. It
// resends until Redis answers or the retry timeout, from now, runs out.
func (r *resource) void(ctx context.Context, fences, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.c.cfg.retryTimeout)
	defer cancel()
	for {
		answer, err := lua.Void.Exec(ctx, r.c.rc, []string{fences}, []string{name, r.c.fenceMs}).ToString()
		if err == nil || !resendable(err, false) {
			return answer, err
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(resendBackoff):
		}
	}
}
