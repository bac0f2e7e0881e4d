package rlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rlock/rlock/lua"
)

// waitForever as a wait means: until ctx is done.
const waitForever time.Duration = -1

// grant is the acquire script's answer.
type grant struct {
	acquired bool
	token    int64         // fencing token of the hold, when acquired
	pttl     time.Duration // the holder's remaining lease, when not acquired
	sent     time.Time     // when the request was first sent
	lease    time.Duration // the lease the request set
}

// acquire takes the lock for ctx's owner, waiting up to wait (waitForever:
// until ctx is done). lease 0 means the watchdog's lease, renewed until
// Unlock.
func (m *Mutex) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	if err := m.check(ctx); err != nil {
		return ctx, false, m.wrap(err)
	}
	octx, o := withOwner(ctx)
	id := holdID{key: m.keys.Hash, field: m.c.field(o)}

	g, err := m.attempt(ctx, id, lease)
	if err == nil && !g.acquired && wait != 0 {
		g, err = m.wait(ctx, id, wait, lease)
	}
	switch {
	case err != nil:
		return ctx, false, m.wrap(err)
	case !g.acquired:
		return ctx, false, nil
	}
	lctx, err := m.register(octx, id, lease, g)
	if err != nil {
		return ctx, false, m.wrap(err)
	}
	return lctx, true, nil
}

// attempt runs the acquire script once for id. The request is resent while
// its outcome is unknown; if it stays unknown (or ctx ends meanwhile), the
// outcome is settled so that no hold is left behind.
func (m *Mutex) attempt(ctx context.Context, id holdID, lease time.Duration) (grant, error) {
	rctx, cancel := context.WithTimeout(ctx, m.c.cfg.retryTimeout)
	g, req, err := m.request(rctx, id, lease)
	cancel()
	if err != nil {
		if inTransit(err) {
			m.settle(ctx, req)
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return grant{}, fmt.Errorf("rlock: acquire: %w", err)
	}
	return g, nil
}

// acquireRequest is one acquire script call, kept so that it can be resent.
type acquireRequest struct {
	keys, args []string
	lease      time.Duration // the lease it sets
}

// request sends one acquire for id, resending it while its outcome is
// unknown, until ctx is done. lease 0 is the watchdog's lease; so is any
// lease while the watchdog already renews the hold.
func (m *Mutex) request(ctx context.Context, id holdID, lease time.Duration) (grant, acquireRequest, error) {
	req := acquireRequest{lease: lease}
	if lease == 0 {
		req.lease = m.c.cfg.lease
	}
	if h := m.c.lookup(id); h != nil && h.watchdogged() {
		req.lease = m.c.cfg.lease
	}
	req.keys = []string{m.keys.Hash, m.keys.Token, m.keys.Latch(m.c.requestID())}
	req.args = []string{id.field, millis(req.lease), millis(m.c.latchLife())}
	reply, sent, err := m.sendAcquire(ctx, req)
	if err != nil {
		return grant{}, req, err
	}
	g, err := parseGrant(reply, sent)
	g.lease = req.lease
	return g, req, err
}

// settle resolves an acquire whose outcome is unknown: it resends the same
// request, which the latch answers with the first outcome if that one ran,
// and gives back the level it was granted. It runs even when ctx is done,
// bounded by the retry timeout; if Redis stays unreachable, the lease bounds
// the orphan.
func (m *Mutex) settle(ctx context.Context, req acquireRequest) {
	sctx, cancel := m.c.detached(ctx)
	defer cancel()
	reply, _, err := m.c.run(sctx, lua.Acquire, req.keys, req.args)
	if err != nil {
		m.c.cfg.logger.Warn("rlock: acquire outcome unknown; the lease will free it", "key", m.keys.Hash, "err", err)
		return
	}
	if g, err := parseGrant(reply, time.Time{}); err == nil && g.acquired {
		if _, _, err := m.release(sctx, req.args[0], req.lease); err != nil {
			m.c.cfg.logger.Warn("rlock: giving back an abandoned acquire failed", "key", m.keys.Hash, "err", err)
		}
	}
}

// register turns a granted acquire into a hold and returns the context that
// carries it.
func (m *Mutex) register(ctx context.Context, id holdID, lease time.Duration, g grant) (context.Context, error) {
	h, err := m.keep(ctx, id, lease, g)
	if err != nil {
		return ctx, err
	}
	if h.carriedBy(ctx) {
		return ctx, nil
	}
	return h.bind(ctx), nil
}

// keep records a granted acquire in this Client's hold for id; lease 0
// hands it to the watchdog. If the hold cannot be kept (Close ran
// meanwhile), the level just granted is given back.
func (m *Mutex) keep(ctx context.Context, id holdID, lease time.Duration, g grant) (*hold, error) {
	h, err := m.c.join(id, g.token)
	if err == nil {
		err = h.apply(g.sent, g.lease, lease == 0)
	}
	if err != nil {
		rctx, cancel := m.c.detached(ctx)
		defer cancel()
		if _, _, rerr := m.release(rctx, id.field, g.lease); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return h, nil
}

// parseGrant reads the acquire script's reply: {1, count, token} or
// {0, pttl}.
func parseGrant(reply []int64, sent time.Time) (grant, error) {
	switch {
	case len(reply) == 3 && reply[0] == 1 && reply[1] > 0:
		return grant{acquired: true, token: reply[2], sent: sent}, nil
	case len(reply) == 2 && reply[0] == 0:
		return grant{pttl: fromMillis(reply[1]), sent: sent}, nil
	}
	return grant{}, fmt.Errorf("rlock: unexpected acquire reply %v", reply)
}

// fromMillis converts a PTTL in ms to a Duration, saturating where a
// Duration overflows: a key may be set to expire centuries away (EXPIREAT
// in the year 5000), and a waiter must then sleep long, not spin on a
// wrapped-around negative PTTL.
func fromMillis(ms int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > limit:
		return math.MaxInt64
	case ms < -limit:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// latchLife is how long Redis keeps the reply to one request: longer than
// any resend of it (an acquire's and its settling's, two retry timeouts).
// A retry timeout so long that this overflows keeps latches for as long as
// a Duration lasts.
func (c *Client) latchLife() time.Duration {
	if c.cfg.retryTimeout > (math.MaxInt64-time.Second)/2 {
		return math.MaxInt64
	}
	return 2*c.cfg.retryTimeout + time.Second
}
