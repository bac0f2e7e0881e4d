package rlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// resendBackoff is the pause before resending a request whose outcome was
// unknown or that Redis refused for a passing reason.
const resendBackoff = 20 * time.Millisecond

// The request protocol. An acquire or release is one request of an owner on
// a lock, made while the owner has its turn on the lock (see slot). Each
// call of the script carries a new sequence number from the Client; a call
// sent after one whose reply never came also carries that one's number as
// superseded, and Redis records it in the lock's fences. So every call is
// applied at most once, a resend never applies twice, and a copy of an
// earlier call that reaches Redis late is refused. When the caller gives up
// with a reply still missing, the request is settled before the turn ends:
// a release call back to the confirmed count supersedes the lost calls and
// takes back whatever they did.

// exchange sends a request of slot s, calling do with a fresh sequence number
// and the number it supersedes, and resends it as resend does. It returns
// do's result and when the request was first sent. The caller has s's turn.
func exchange[T any](ctx context.Context, c *Client, s *slot, do func(ctx context.Context, seq, superseded string) (T, error)) (T, time.Time, error) {
	return resend(ctx, c, s.id.key, func(ctx context.Context) (T, error) {
		seq := c.seq.Add(1)
		r, err := do(ctx, strconv.FormatUint(seq, 10), strconv.FormatUint(s.unsettled, 10))
		switch {
		case err == nil:
			s.unsettled = 0 // the call fenced every earlier one
		case inTransit(err):
			s.unsettled = seq
		}
		return r, err
	})
}

// resend runs send and returns its result and when it was first sent. A
// request that failed in transit, or that Redis refused for a passing reason
// (BUSY, LOADING, TRYAGAIN, ...), is sent again until ctx is done; then the
// error names the last refusal too, so that a retry timeout running out
// does not hide why. key only names the request in logs.
func resend[T any](ctx context.Context, c *Client, key string, send func(context.Context) (T, error)) (T, time.Time, error) {
	sent := time.Now()
	var timer *time.Timer // made on the first resend: most requests need none
	var last error
	for {
		reply, err := send(ctx)
		if err == nil || !resendable(err) || ctx.Err() != nil {
			if err != nil && last != nil && ctx.Err() != nil {
				err = fmt.Errorf("%w (after %w)", err, last)
			}
			return reply, sent, err
		}
		last = err
		c.cfg.logger.Debug("rlock: resending request", "key", key, "err", err)
		if timer == nil {
			timer = time.NewTimer(resendBackoff)
			defer timer.Stop()
		} else {
			timer.Reset(resendBackoff)
		}
		select {
		case <-ctx.Done():
			return reply, sent, err
		case <-timer.C:
		}
	}
}

// resendable reports whether a request that failed with err may be sent
// again: its reply was lost in transit, or Redis turned it away for a reason
// that passes.
func resendable(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return true
	}
	if re.IsTryAgain() || re.IsLoading() || re.IsClusterDown() {
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

// errStale is a script's answer to a call that a later call of the same
// owner superseded. The caller of a live request never sees it: only copies
// that arrive late do.
var errStale = errors.New("rlock: superseded request")
