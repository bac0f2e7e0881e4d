package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// MultiLock is one lock over several Mutexes, each normally from a Client on
// a different, independent Redis master: NewMultiLock needs every one of
// them, NewRedLock a majority (the Redlock algorithm). It has the methods of
// Mutex with the same meaning; the context it returns carries one owner for
// every node, and a nested Lock with it re-enters on every node.
type MultiLock struct {
	mutexes []*Mutex
	quorum  int
}

// NewMultiLock returns a lock that is held only when every mutex is.
func NewMultiLock(mutexes ...*Mutex) *MultiLock {
	return &MultiLock{mutexes: mutexes, quorum: len(mutexes)}
}

// NewRedLock returns a lock that is held when a majority of the mutexes,
// len/2+1, were taken within the lease (Redlock's validity rule: the lease
// left after taking them, less a clock-drift allowance, must be positive).
func NewRedLock(mutexes ...*Mutex) *MultiLock {
	return &MultiLock{mutexes: mutexes, quorum: len(mutexes)/2 + 1}
}

// Lock waits until a quorum of the mutexes is taken for ctx's owner and
// returns a context carrying that owner. Each node's watchdog renews its
// part until Unlock; a node that loses its part is taken again on renewal,
// and the context is done, with cause ErrLockLost, once fewer than the
// quorum are held.
func (ml *MultiLock) Lock(ctx context.Context) (context.Context, error) {
	lctx, _, err := ml.acquire(ctx, waitForever, 0)
	return lctx, err
}

// LockFor is Lock with a fixed lease on every node and no watchdog.
func (ml *MultiLock) LockFor(ctx context.Context, lease time.Duration) (context.Context, error) {
	if err := validLease(lease); err != nil {
		return ctx, err
	}
	lctx, _, err := ml.acquire(ctx, waitForever, lease)
	return lctx, err
}

// TryLock tries for up to wait (0: one round) and reports whether the lock
// was taken; lease > 0 is fixed, lease <= 0 hands it to the watchdogs. When
// it was not taken in time it returns ctx unchanged, false and nil, and no
// node keeps a part of it.
func (ml *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	lease, err := tryLockArgs(wait, lease)
	if err != nil {
		return ctx, false, err
	}
	return ml.acquire(ctx, wait, lease)
}

// check reports why ml cannot make calls with ctx, if it cannot.
func (ml *MultiLock) check(ctx context.Context) error {
	if ml == nil || len(ml.mutexes) == 0 {
		return errors.New("rlock: multilock of no mutexes")
	}
	for _, m := range ml.mutexes {
		if err := m.check(ctx); err != nil {
			return m.wrap(err)
		}
	}
	return nil
}

// acquire runs rounds until one takes a quorum within the lease, or wait
// (waitForever: until ctx is done) runs out. Between rounds it sleeps a
// random moment, so that contending clients do not meet in lockstep.
func (ml *MultiLock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	if err := ml.check(ctx); err != nil {
		return ctx, false, err
	}
	octx, o := withOwner(ctx)
	var deadline time.Time
	if wait != waitForever {
		deadline = time.Now().Add(wait)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		holds, err := ml.round(ctx, o, lease)
		if err != nil {
			return ctx, false, err
		}
		if holds != nil {
			return ml.hold(octx, o, lease, holds), true, nil
		}
		pause := ml.retryDelay(lease)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return ctx, false, nil
			}
			pause = min(pause, left)
		}
		timer.Reset(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx, false, fmt.Errorf("rlock: multilock wait: %w", ctx.Err())
		}
	}
}

// round asks every node in order, each within nodeTimeout, and returns the
// holds taken when they reach the quorum within the lease; nil otherwise,
// after giving back every part taken or possibly taken.
func (ml *MultiLock) round(ctx context.Context, o *owner, lease time.Duration) ([]*hold, error) {
	start := time.Now()
	grants := make([]grant, len(ml.mutexes))
	unknown := make([]bool, len(ml.mutexes))
	taken, failed := 0, 0
	minLease := time.Duration(0)
	for i, m := range ml.mutexes {
		id := holdID{key: m.keys.Hash, field: m.c.field(o)}
		nctx, cancel := context.WithTimeout(ctx, nodeTimeout(lease, m))
		g, req, err := m.request(nctx, id, lease)
		cancel()
		if minLease == 0 || req.lease < minLease {
			minLease = req.lease
		}
		switch {
		case err != nil:
			unknown[i] = inTransit(err)
			failed++
		case g.acquired:
			grants[i] = g
			taken++
		default:
			failed++
		}
		if ctx.Err() != nil || failed > len(ml.mutexes)-ml.quorum {
			break
		}
	}
	validity := minLease - time.Since(start) - drift(minLease)
	if ctx.Err() == nil && taken >= ml.quorum && validity > 0 {
		// A part whose reply was lost is left to Unlock, which releases
		// every node, and to its lease: nothing renews it.
		if holds := ml.keepAll(ctx, o, lease, grants); holds != nil {
			return holds, nil
		}
	}
	for i := range grants {
		unknown[i] = unknown[i] || grants[i].acquired
	}
	ml.giveBack(ctx, o, unknown)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("rlock: multilock: %w", ctx.Err())
	}
	return nil, nil
}

// keepAll records the granted parts as holds on their Clients. It returns
// nil when fewer than the quorum could be kept (a Client closed meanwhile).
func (ml *MultiLock) keepAll(ctx context.Context, o *owner, lease time.Duration, grants []grant) []*hold {
	holds := make([]*hold, len(ml.mutexes))
	kept := 0
	for i, m := range ml.mutexes {
		if !grants[i].acquired {
			continue
		}
		h, err := m.keep(ctx, holdID{key: m.keys.Hash, field: m.c.field(o)}, lease, grants[i])
		if err == nil {
			holds[i] = h
			kept++
		}
	}
	if kept < ml.quorum {
		return nil
	}
	return holds
}

// giveBack releases one level on every node marked, at once and each within
// the retry timeout, even when ctx is done: a part whose reply was lost may
// still have been taken.
func (ml *MultiLock) giveBack(ctx context.Context, o *owner, marked []bool) {
	rctx := context.WithoutCancel(ctx)
	done := make(chan struct{}, len(marked))
	n := 0
	for i, m := range ml.mutexes {
		if !marked[i] {
			continue
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			if err := m.Unlock(context.WithValue(rctx, ownerKey{}, o)); err != nil && !errors.Is(err, ErrNotHeld) {
				m.c.cfg.logger.Warn("rlock: multilock could not give back a part", "key", m.keys.Hash, "err", err)
			}
		}()
	}
	for range n {
		<-done
	}
}

// Unlock leaves one level on every node, all of them even when some fail.
// It reports, joined, the failures on nodes that held a part; a node that
// held none is still asked (an acquire whose reply was lost may have left a
// part there), within the node timeout, and its failure is only logged. It
// returns ErrNotHeld when the owner held no part of the lock.
func (ml *MultiLock) Unlock(ctx context.Context) error {
	if err := ml.check(ctx); err != nil {
		return err
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return ErrNotHeld
	}
	mh, _ := ctx.Value(multiKey{ml}).(*multiHold)
	held := make([]bool, len(ml.mutexes))
	if mh != nil {
		held = mh.beginUnlock()
	}
	errs := make([]error, len(ml.mutexes))
	var wg sync.WaitGroup
	for i, m := range ml.mutexes {
		wg.Go(func() {
			if mh != nil && !held[i] {
				errs[i] = m.releaseStray(ctx, o)
				return
			}
			errs[i] = m.Unlock(context.WithValue(context.WithoutCancel(ctx), ownerKey{}, o))
		})
	}
	wg.Wait()
	if mh != nil {
		mh.endUnlock()
	}
	notHeld := 0
	var failures []error
	for i, err := range errs {
		switch {
		case errors.Is(err, ErrNotHeld):
			notHeld++
		case err == nil:
		case mh == nil || held[i]:
			failures = append(failures, err)
		default:
			m := ml.mutexes[i]
			m.c.cfg.logger.Debug("rlock: multilock could not reach a node that held no part", "key", m.keys.Hash, "err", err)
		}
	}
	if notHeld == len(ml.mutexes) {
		return ErrNotHeld
	}
	return errors.Join(failures...)
}

// releaseStray leaves one level of a part this process does not know it
// holds (its acquire reply was lost), within the node timeout: no local hold
// exists to end, and a node that cannot answer must not hold up Unlock.
func (m *Mutex) releaseStray(ctx context.Context, o *owner) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodeTimeout(0, m))
	defer cancel()
	result, _, err := m.release(rctx, m.c.field(o), m.c.cfg.lease)
	if err == nil && result == notHeld {
		err = ErrNotHeld
	}
	return err
}

// nodeTimeout bounds one node's acquire in a round: small against the
// lease, so that a slow node cannot eat the validity of the others.
func nodeTimeout(lease time.Duration, m *Mutex) time.Duration {
	if lease == 0 {
		lease = m.c.cfg.lease
	}
	return min(max(lease/10, 50*time.Millisecond), time.Second)
}

// retryDelay is a random pause between rounds, up to a tenth of the lease
// and at most 200 ms.
func (ml *MultiLock) retryDelay(lease time.Duration) time.Duration {
	if lease == 0 {
		lease = ml.mutexes[0].c.cfg.lease
	}
	limit := min(max(lease/10, 10*time.Millisecond), 200*time.Millisecond)
	return time.Duration(rand.Int64N(int64(limit))) + time.Millisecond
}
