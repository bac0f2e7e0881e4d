package rlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// The request protocol. An acquire, a release or a CountDown is one request
// of an owner on a resource, made in the owner's turn (see turn.go). Each
// call of the script carries a new sequence number from the Client; a call
// sent after one whose reply never came also carries that one's number as
// superseded, and Redis records it in the resource's fences. So every call
// is applied at most once, a resend never applies twice, and a copy of an
// earlier call that reaches Redis late is refused (stale). When the caller
// gives up with a reply still missing, the request is settled before the
// turn ends: a release call back to the confirmed count supersedes the lost
// calls and takes back whatever they did (release.go).

// resendBackoff is the pause before resending a request whose outcome was
// unknown or that Redis refused for a passing reason.
const resendBackoff = 20 * time.Millisecond

// scriptCall is one call of a kind's acquire or release script: its KEYS
// and ARGV, in the one layout every kind's scripts take (lua/doc.go). A
// script reads what it needs of them: only the fair lock's read the queue.
// The request protocol fills in the sequence numbers, args[1] and args[4],
// per call.
type scriptCall struct {
	keys, args []string
}

// callBuf backs the KEYS and ARGV of a lock's acquire or release call
// (acquireCall, releaseCall). Lock and Unlock take one from callBufs and
// put it back once the request is over, so that a cycle allocates no
// slices for its calls.
type callBuf struct {
	keys [5]string
	args [11]string
}

var callBufs = sync.Pool{New: func() any { return new(callBuf) }}

// freeCall returns b to callBufs; its strings are overwritten by its next
// call.
func freeCall(b *callBuf) {
	callBufs.Put(b)
}

// exchange sends call to script s as a request of turn t, whose turn the caller
// has: it stamps every call with a fresh sequence number and the one it
// supersedes (args[1] and args[4]), and sends it again after a lost reply
// or a passing refusal until ctx is done. With acked, each call is sent
// with WAIT for the Client's replicas (WithReplicaAck), and acks says how
// many acknowledged. It returns the script's reply, an array of numbers,
// and when the request was first sent.
func (c *Client) exchange(ctx context.Context, t *turn, s *lua.Script, call scriptCall, acked bool) (reply []int64, acks int64, sent time.Time, err error) {
	return c.exchangeInto(nil, ctx, t, s, call, acked)
}

// exchangeInto is exchange appending the reply to into: a caller that
// passes an array of its own on the stack allocates nothing for it.
func (c *Client) exchangeInto(into []int64, ctx context.Context, t *turn, s *lua.Script, call scriptCall, acked bool) (reply []int64, acks int64, sent time.Time, err error) {
	msg, acks, sent, err := c.exchangeMessage(ctx, t, s, call, acked)
	if err != nil {
		return nil, acks, sent, err
	}
	reply, err = appendInts(into, msg)
	return reply, acks, sent, err
}

// appendInts appends the numbers of the array msg to into.
func appendInts(into []int64, msg rueidis.RedisMessage) ([]int64, error) {
	values, err := msg.ToArray()
	if err != nil {
		return nil, err
	}
	for _, v := range values {
		n, err := v.AsInt64()
		if err != nil {
			return nil, err
		}
		into = append(into, n)
	}
	return into, nil
}

// exchangeMessage is exchange for a script whose reply is not only
// numbers (do.lua's carries the replies of the commands it ran).
func (c *Client) exchangeMessage(ctx context.Context, t *turn, s *lua.Script, call scriptCall, acked bool) (reply rueidis.RedisMessage, acks int64, sent time.Time, err error) {
	sent = time.Now()
	var pause backoff
	defer pause.stop()
	var last error
	for {
		seq := c.seq.Add(1)
		call.args[1], call.args[4] = strconv.FormatUint(seq, 10), strconv.FormatUint(t.unsettled, 10)
		if acked {
			reply, acks, err = c.execAcked(ctx, s, call)
		} else {
			reply, err = s.Exec(ctx, c.rc, call.keys, call.args).ToMessage()
		}
		switch {
		case err == nil:
			t.unsettled, t.answered = 0, seq // the call fenced every earlier one
		case inTransit(err):
			t.unsettled = seq
		}
		if err == nil || !resendable(err, acked) || ctx.Err() != nil {
			if err != nil && last != nil && ctx.Err() != nil {
				err = fmt.Errorf("%w (after %w)", err, last)
			}
			return reply, acks, sent, err
		}
		last = err
		c.cfg.logger.Debug("rlock: resending request", "key", t.id.key, "err", err)
		if !pause.wait(ctx) {
			return reply, acks, sent, err
		}
	}
}

// backoff is the pause before each resend of a call, resendBackoff, on a
// timer made at the first: most calls need none.
type backoff struct{ timer *time.Timer }

// wait pauses for resendBackoff, and reports false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	if b.timer == nil {
		b.timer = time.NewTimer(resendBackoff)
	} else {
		b.timer.Reset(resendBackoff)
	}
	select {
	case <-ctx.Done():
		return false
	case <-b.timer.C:
		return true
	}
}

// stop releases the timer, if one was made.
func (b *backoff) stop() {
	if b.timer != nil {
		b.timer.Stop()
	}
}

// execAcked sends one call of s and WAIT in one round trip on one
// dedicated connection (WAIT counts only the writes of its own
// connection), and returns the script's reply and how many replicas
// acknowledged the writes made up to it. On a Cluster both go to the node
// of the lock's slot. A dedicated connection does not follow a redirect:
// on MOVED a read of the lock's key through the Client's own connections
// (which follow it) has rueidis learn the slot's new node, and the request
// is resent (resendable); on ASK (a migration under way) it is resent until
// the migration ends.
func (c *Client) execAcked(ctx context.Context, s *lua.Script, call scriptCall) (reply rueidis.RedisMessage, acks int64, err error) {
	err = c.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
		res := dc.DoMulti(ctx, s.EvalSHA(dc.B(), call.keys, call.args), c.waitCommand(dc))
		if re, ok := rueidis.IsRedisErr(res[0].Error()); ok && re.IsNoScript() {
			res = dc.DoMulti(ctx, s.Eval(dc.B(), call.keys, call.args), c.waitCommand(dc))
		}
		if reply, err = res[0].ToMessage(); err != nil {
			return s.MapError(err)
		}
		if acks, err = res[1].AsInt64(); err != nil {
			return fmt.Errorf("rlock: wait for replicas: %w", err)
		}
		return nil
	})
	if re, ok := rueidis.IsRedisErr(err); ok {
		if _, moved := re.IsMoved(); moved {
			c.rc.Do(ctx, c.rc.B().Exists().Key(call.keys[0]).Build()) // its error, if any, is the resend's
		}
	}
	return reply, acks, err
}

// waitCommand is the WAIT that WithReplicaAck asks for.
func (c *Client) waitCommand(dc rueidis.DedicatedClient) rueidis.Completed {
	return dc.B().Wait().Numreplicas(int64(c.cfg.replicas)).Timeout(max(c.cfg.replicaTimeout.Milliseconds(), 1)).Build()
}

// resendable reports whether a request that failed with err may be sent
// again: its reply was lost in transit, or Redis turned it away for a reason
// that passes; for a request sent acked (execAcked, on a dedicated
// connection, which does not follow a redirect), a MOVED or an ASK too.
// Anywhere else rueidis follows them, and one that reaches rlock is no
// reason to wait.
func resendable(err error, acked bool) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return true
	}
	if re.IsTryAgain() || re.IsLoading() || re.IsClusterDown() {
		return true
	}
	_, moved := re.IsMoved()
	_, asked := re.IsAsk()
	if acked && (moved || asked) {
		return true
	}
	msg := re.Error()
	for _, prefix := range []string{"BUSY", "MASTERDOWN", "READONLY"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// inTransit reports whether err leaves a call's outcome unknown: it may
// have run in Redis although no reply came back.
func inTransit(err error) bool {
	_, replied := rueidis.IsRedisErr(err)
	return !replied
}

// errStale is a script's answer to a call that a later call of the same
// owner superseded. The caller of a live request never sees it: only copies
// that arrive late do.
var errStale = errors.New("rlock: superseded request")

// doneErr is why the done ctx ended: ctx.Err(), which errors.Is matches to
// context.Canceled or context.DeadlineExceeded, joined with its cause when
// that says more (a lock context ended by a loss or by Close matches
// ErrLockLost, and ErrClosed).
func doneErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w (%w)", err, cause)
}

// detached returns a context for clean-up that must run even when ctx is
// done (settling a request, an Unlock after cancellation): ctx's values
// without its cancellation, bounded by the retry timeout.
func (c *Client) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.cfg.retryTimeout)
}

// fenceLife is how long Redis keeps a fence: longer than a copy of a call
// can plausibly wait in a connection or a paused Redis after the call was
// given up (a watchdog lease and two retry timeouts). It saturates rather
// than overflows.
func (c *Client) fenceLife() time.Duration {
	return addSat(c.cfg.lease, addSat(c.cfg.retryTimeout, c.cfg.retryTimeout))
}

// addSat adds two non-negative durations, saturating at the largest.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// millis is millis(d), kept for the watchdog's lease.
func (c *Client) millis(d time.Duration) string {
	if d == c.cfg.lease {
		return c.leaseMs
	}
	return millis(d)
}

// millis formats d as whole milliseconds for a script argument, at least 1.
func millis(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// flag is a script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// clientTurn takes the turn of this Client's own requests on r, those
// whose owner is the Client rather than a context (a latch's count-downs,
// a semaphore's permit releases), and reserves first: a number below every
// call of the request, by which the script tells them from the calls
// before. The caller must give the turn back.
func (r *resource) clientTurn(ctx context.Context) (t *turn, first string, err error) {
	t, err = r.c.take(ctx, holdID{key: r.keys.Hash(), field: r.c.id})
	if err != nil {
		return nil, "", err
	}
	return t, strconv.FormatUint(r.c.seq.Add(1), 10), nil
}
