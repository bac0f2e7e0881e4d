package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
	"github.com/rlock/rlock/rlock"
)

// lateRenewal holds back the watchdog's first renewal of one lock hash, as
// a connection that stalls with it in its buffer (or a Redis paused with
// it unread): the watchdog sees the reply lost, and the call reaches Redis
// only when the test delivers it, after whatever the holder did next.
type lateRenewal struct {
	rueidis.Client
	hash string
	held chan []string // the held-back command
	once sync.Once
}

func newLateRenewal(rc rueidis.Client, hash string) *lateRenewal {
	return &lateRenewal{Client: rc, hash: hash, held: make(chan []string, 1)}
}

// DoMulti is the Client's, but for the first renewal of the hash that
// ran: its reply is lost, and the test gets a copy of it to deliver late.
// The commands are read before they are sent: rueidis recycles them.
func (l *lateRenewal) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	sent := make([][]string, len(cmds))
	for i, cmd := range cmds {
		sent[i] = slices.Clone(cmd.Commands())
	}
	results := l.Client.DoMulti(ctx, cmds...)
	for i, c := range sent {
		renew := len(c) > 3 && (c[0] == "EVALSHA" && c[1] == lua.Renew.SHA1() || c[0] == "EVAL" && c[1] == lua.Renew.Text())
		if renew && slices.Contains(c[3:], l.hash) && ran(results[i]) {
			l.once.Do(func() {
				l.held <- c
				results[i] = lostReply()
			})
		}
	}
	return results
}

// TestFaultLateRenewalLeavesFixedLease: a watchdog's renewal sent for a
// hold reaches Redis after that hold was unlocked and its owner took the
// lock again for a fixed lease. The late renewal must not lengthen that
// lease (it would hold the lock up to a watchdog lease after its owner
// asked for less), for every kind the watchdog renews.
//
// One owner takes the lock both times (the renewal names the owner's
// field). The renewal is sent late by holding back the watchdog's first renewal
// and delivering its very command after the new hold began: a real one
// would come the same way out of a stalled connection. It is held back
// after it ran (so the first hold stays renewed), which a copy sent again
// is: renew.lua is the same call either time.
func TestFaultLateRenewalLeavesFixedLease(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	const watchdogLease, fixedLease = 3 * time.Second, 700 * time.Millisecond
	kinds := []struct {
		name  string
		keys  func(string) keys.Keys
		verbs func(c *rlock.Client, n string) leaseVerbs
	}{
		{"Mutex", lockKeys, func(c *rlock.Client, n string) leaseVerbs { return exclusive(c.Mutex(n)) }},
		{"FairMutex", fairKeys, func(c *rlock.Client, n string) leaseVerbs { return exclusive(c.FairMutex(n)) }},
		{"RWMutex.Lock", rwKeys, func(c *rlock.Client, n string) leaseVerbs { return exclusive(c.RWMutex(n)) }},
		{"RWMutex.RLock", rwKeys, func(c *rlock.Client, n string) leaseVerbs {
			m := c.RWMutex(n)
			return leaseVerbs{m.RLock, m.RLockFor, m.RUnlock}
		}},
		{"Semaphore", func(n string) keys.Keys { return keys.NewSemaphore(rlock.DefaultKeyPrefix, n) },
			func(c *rlock.Client, n string) leaseVerbs {
				s := c.Semaphore(n)
				_, err := s.TrySetPermits(context.Background(), 2)
				require.NoError(t, err)
				return leaseVerbs{s.Acquire, s.AcquireFor, s.Release}
			}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			name := redistest.LockName(t)
			hash := k.keys(name).Hash
			late := newLateRenewal(node.Client(t), hash)
			c := newRlock(t, late, rlock.WithLeaseTime(watchdogLease))

			// One owner takes the lock twice: the owner of a lock context
			// (of a lock of its own), as code on one Java thread would.
			other := c.Mutex(name + ":owner")
			owner, err := other.Lock(t.Context())
			require.NoError(t, err)
			defer func() { assert.NoError(t, other.Unlock(owner)) }()

			v := k.verbs(c, name)
			ctx, err := v.take(owner)
			require.NoError(t, err)
			var renewal []string
			select {
			case renewal = <-late.held:
			case <-time.After(watchdogLease):
				t.Fatal("no renewal within a lease")
			}
			require.NoError(t, v.give(ctx))

			again, err := v.takeFor(owner, fixedLease)
			require.NoError(t, err)
			res := raw.Do(t.Context(), raw.B().Arbitrary(renewal...).Build())
			reply, err := res.AsIntSlice()
			require.NoError(t, err, "the late renewal ran")
			// A batch renews the owner's other lock too: the answer for
			// this one is at its key's place.
			at := slices.Index(renewal[3:], hash)
			require.Less(t, at, len(reply))
			assert.Zero(t, reply[at], "the late renewal renewed nothing here")
			ms, err := raw.Do(t.Context(), raw.B().Pttl().Key(hash).Build()).AsInt64()
			require.NoError(t, err)
			assert.LessOrEqual(t, ms, fixedLease.Milliseconds(), "the fixed lease is as asked")
			select {
			case <-again.Done():
				assert.ErrorIs(t, context.Cause(again), rlock.ErrLockLost, "the hold ended with its lease")
			case <-time.After(watchdogLease):
				t.Fatal("the hold outlived its fixed lease")
			}
		})
	}
}

// leaseVerbs are a kind's verbs: take with the watchdog's lease, take
// for a fixed lease, and give back.
type leaseVerbs struct {
	take    func(context.Context) (context.Context, error)
	takeFor func(context.Context, time.Duration) (context.Context, error)
	give    func(context.Context) error
}

// exclusive is the leaseVerbs of an exclusive lock.
func exclusive(m interface {
	Lock(context.Context) (context.Context, error)
	LockFor(context.Context, time.Duration) (context.Context, error)
	Unlock(context.Context) error
}) leaseVerbs {
	return leaseVerbs{m.Lock, m.LockFor, m.Unlock}
}
