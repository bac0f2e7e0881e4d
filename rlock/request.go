package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// resendBackoff is the pause before resending a request whose outcome was
// unknown or that Redis refused for a passing reason.
const resendBackoff = 20 * time.Millisecond

// run executes script and returns its integer-array reply and when the
// request was first sent, resending it as resend does: callers use it only
// for scripts that are safe to resend, idempotent or latched by request id.
func (c *Client) run(ctx context.Context, script *rueidis.Lua, keys, args []string) ([]int64, time.Time, error) {
	return resend(ctx, c, keys[0], func(ctx context.Context) ([]int64, error) {
		return script.Exec(ctx, c.rc, keys, args).AsIntSlice()
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

// inTransit reports whether err leaves a request's outcome unknown: it may
// have run in Redis although no reply came back. An acquire that too few
// replicas acknowledged has a known outcome: its level was given back.
func inTransit(err error) bool {
	if errors.Is(err, ErrNotReplicated) {
		return false
	}
	_, replied := rueidis.IsRedisErr(err)
	return !replied
}

// detached returns a context for clean-up that must run even when ctx is
// done (giving back a level, an Unlock after cancellation): ctx's values
// without its cancellation, bounded by the retry timeout.
func (c *Client) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.cfg.retryTimeout)
}

// millis formats d as whole milliseconds for a script argument, at least 1.
func millis(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}
