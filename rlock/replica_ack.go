package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// sendAcquire sends call, an acquire request for slot s, and returns the
// script's reply and when the request was first sent. With WithReplicaAck
// it also waits for the replicas, and takes back a level they did not
// acknowledge, failing with ErrNotReplicated.
func (l *lock) sendAcquire(ctx context.Context, call scriptCall, s *slot) ([]int64, time.Time, error) {
	keys, args := call.keys, call.args
	if l.c.cfg.replicas == 0 {
		return exchange(ctx, l.c, s, func(ctx context.Context, seq, superseded string) ([]int64, error) {
			args[1], args[4] = seq, superseded
			return l.kind.acquire.Exec(ctx, l.c.rc, keys, args).AsIntSlice()
		})
	}
	res, sent, err := exchange(ctx, l.c, s, func(ctx context.Context, seq, superseded string) (ackedReply, error) {
		args[1], args[4] = seq, superseded
		return l.c.acquireAcked(ctx, l.kind.acquire, keys, args)
	})
	if err != nil {
		return nil, sent, err
	}
	g, err := parseGrant(res.reply)
	if err == nil && g.acquired {
		l.replicaAcked(ctx, res.acks, sent)
	}
	if err != nil || !g.acquired || res.acks >= int64(l.c.cfg.replicas) {
		return res.reply, sent, err
	}
	err = fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, res.acks, l.c.cfg.replicas, l.c.cfg.replicaTimeout)
	if rerr := l.giveBack(ctx, s, s.count, "an acquire the replicas did not acknowledge"); rerr != nil {
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
func (c *Client) acquireAcked(ctx context.Context, script *lua.Script, keys, args []string) (ackedReply, error) {
	var out ackedReply
	err := c.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
		res := dc.DoMulti(ctx, script.EvalSHA(dc.B(), keys, args), c.waitCommand(dc))
		if re, ok := rueidis.IsRedisErr(res[0].Error()); ok && re.IsNoScript() {
			res = dc.DoMulti(ctx, script.Eval(dc.B(), keys, args), c.waitCommand(dc))
		}
		reply, err := res[0].AsIntSlice()
		if err != nil {
			return script.MapError(err)
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
