package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// WithReplicaAck makes every acquire wait until at least n replicas have
// acknowledged it (Redis WAIT n timeout, sent down the connection that ran
// the acquire), as Redisson's checkLockSyncedSlaves does. A level that fewer
// replicas acknowledged within timeout is given back at once and the call
// fails with ErrNotReplicated, so that no lock is held that a failover to a
// replica would forget. The default, n 0, does not wait.
func WithReplicaAck(n int, timeout time.Duration) Option {
	return func(c *config) error {
		switch {
		case n < 0:
			return fmt.Errorf("rlock: replica count %d is negative", n)
		case n > 0 && timeout <= 0:
			return fmt.Errorf("%w: replica ack timeout %v must be positive", ErrInvalidDuration, timeout)
		}
		c.replicas, c.replicaTimeout = n, timeout
		return nil
	}
}

// sendAcquire runs one acquire request, resending it as run does; with
// WithReplicaAck it also waits for the replicas, and gives back a level they
// did not acknowledge.
func (m *Mutex) sendAcquire(ctx context.Context, req acquireRequest) ([]int64, time.Time, error) {
	if m.c.cfg.replicas == 0 {
		return m.c.run(ctx, lua.Acquire, req.keys, req.args)
	}
	res, sent, err := resend(ctx, m.c, req.keys[0], func(ctx context.Context) (ackedReply, error) {
		return m.c.acquireAcked(ctx, req.keys, req.args)
	})
	if err != nil {
		return nil, sent, err
	}
	g, err := parseGrant(res.reply, sent)
	if err != nil || !g.acquired || res.acks >= int64(m.c.cfg.replicas) {
		return res.reply, sent, err
	}
	err = fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, res.acks, m.c.cfg.replicas, m.c.cfg.replicaTimeout)
	rctx, cancel := m.c.detached(ctx)
	defer cancel()
	if _, _, rerr := m.release(rctx, req.args[0], req.lease); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return nil, sent, err
}

// ackedReply is an acquire script's reply and how many replicas
// acknowledged the writes made up to it.
type ackedReply struct {
	reply []int64
	acks  int64
}

// acquireAcked sends the acquire script and WAIT in one round trip on one
// dedicated connection: WAIT counts only the writes of its own connection.
// On a Cluster both go to the node of the lock's slot.
func (c *Client) acquireAcked(ctx context.Context, keys, args []string) (ackedReply, error) {
	var out ackedReply
	err := c.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
		script := lua.AcquireSource.EvalSHA(dc.B(), keys, args)
		res := dc.DoMulti(ctx, script, c.waitCommand(dc))
		if re, ok := rueidis.IsRedisErr(res[0].Error()); ok && re.IsNoScript() {
			script = lua.AcquireSource.Eval(dc.B(), keys, args)
			res = dc.DoMulti(ctx, script, c.waitCommand(dc))
		}
		reply, err := res[0].AsIntSlice()
		if err != nil {
			return err
		}
		acks, err := res[1].AsInt64()
		if err != nil {
			return fmt.Errorf("rlock: wait for replicas: %w", err)
		}
		out = ackedReply{reply: reply, acks: acks}
		return nil
	})
	return out, err
}

func (c *Client) waitCommand(dc rueidis.DedicatedClient) rueidis.Completed {
	return dc.B().Wait().Numreplicas(int64(c.cfg.replicas)).Timeout(max(c.cfg.replicaTimeout.Milliseconds(), 1)).Build()
}
