package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestFaultLateRenewalLeavesFairFixedHeir: the converse of
// TestFairHeirRenewedThoughEntryFixed (package rlock). One owner O (two goroutines sharing it) held
// a FairMutex with Lock, and a renewal of that hold is late. Then, while
// another owner of the same Client holds the lock, goroutine A of O waits
// with LockFor (a fixed lease; parked first, so it is the heir) and
// goroutine B of O waits with Lock, asks (its entry's #lease becomes '0'),
// and gives up (A still waits, so O keeps its entry). The holder's Unlock
// hands the lock to A with A's fixed lease, marked from ARGV[11] (A's),
// not from the entry ('0', B's): the late renewal must not stretch A's
// fixed lease to the watchdog's, which would keep the lock held in Redis
// well after A's hold ended.
func TestFaultLateRenewalLeavesFairFixedHeir(t *testing.T) {
	node := faultNode(t)
	raw := node.Client(t)
	const wdLease, fixedLease = 3 * time.Second, 700 * time.Millisecond
	name := redistest.LockName(t)
	k := fairKeys(name)
	late := newLateRenewal(node.Client(t), k.Hash)
	c := newRlock(t, late, rlock.WithLeaseTime(wdLease))
	fm := c.FairMutex(name)

	other := c.Mutex(name + ":owner")
	owner, err := other.Lock(t.Context())
	require.NoError(t, err)
	defer func() { assert.NoError(t, other.Unlock(owner)) }()

	first, err := fm.Lock(owner)
	require.NoError(t, err)
	var renewal []string
	select {
	case renewal = <-late.held:
	case <-time.After(wdLease):
		t.Fatal("no renewal within a lease")
	}
	require.NoError(t, fm.Unlock(first))

	held, err := fm.Lock(t.Context()) // another owner of the same Client
	require.NoError(t, err)

	type res struct {
		ctx context.Context
		err error
	}
	gotA := make(chan res, 1)
	go func() {
		ctx, err := fm.LockFor(owner, fixedLease)
		gotA <- res{ctx, err}
	}()
	time.Sleep(300 * time.Millisecond) // A asks and parks first
	ctxB, cancelB := context.WithCancel(owner)
	gotB := make(chan res, 1)
	go func() {
		ctx, err := fm.Lock(ctxB)
		gotB <- res{ctx, err}
	}()
	redistest.Eventually(t, "B's ask wrote the entry", func(ctx context.Context) error {
		q, err := raw.Do(ctx, raw.B().Hgetall().Key(k.Queue).Build()).AsStrMap()
		if err != nil {
			return err
		}
		for f, v := range q {
			if strings.HasSuffix(f, "#lease") && v == "0" {
				return nil
			}
		}
		return fmt.Errorf("queue %v", q)
	})
	cancelB()
	rb := <-gotB
	require.ErrorIs(t, rb.err, context.Canceled)
	time.Sleep(100 * time.Millisecond)

	require.NoError(t, fm.Unlock(held))
	var ra res
	select {
	case ra = <-gotA:
	case <-time.After(5 * time.Second):
		t.Fatal("A never took the lock")
	}
	require.NoError(t, ra.err)
	h, err := raw.Do(t.Context(), raw.B().Hgetall().Key(k.Hash).Build()).AsStrMap()
	require.NoError(t, err)
	t.Logf("lock hash after the hand-over to A: %v", h)

	reply, err := raw.Do(t.Context(), raw.B().Arbitrary(renewal...).Build()).AsIntSlice()
	require.NoError(t, err, "the late renewal ran")
	at := slices.Index(renewal[3:], k.Hash)
	require.Less(t, at, len(reply))
	assert.Zero(t, reply[at], "the late renewal renewed nothing here")
	ms, err := raw.Do(t.Context(), raw.B().Pttl().Key(k.Hash).Build()).AsInt64()
	require.NoError(t, err)
	assert.LessOrEqual(t, ms, fixedLease.Milliseconds(), "A's fixed lease is as asked")
	select {
	case <-ra.ctx.Done():
	case <-time.After(wdLease):
		t.Fatal("A's hold outlived its fixed lease")
	}
	ms, err = raw.Do(t.Context(), raw.B().Pttl().Key(k.Hash).Build()).AsInt64()
	require.NoError(t, err)
	t.Logf("A's hold ended (%v); the lock's PTTL in Redis is still %d ms", context.Cause(ra.ctx), ms)
}
