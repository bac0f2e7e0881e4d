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
// them, NewRedLock a majority (the Redlock algorithm). It has Lock,
// LockFor, TryLock and Unlock, with Mutex's meanings; the context it
// returns carries one owner for every node, and a nested Lock with it
// re-enters on every node, through this handle or any other on the same
// Mutexes in the same order. Its parts are its owner's holds on the nodes:
// a Lock by an owner that holds one of them already otherwise (a Mutex
// Lock of its own, another MultiLock over it, another goroutine's hold of
// this one) fails with ErrInvalidArgument, since the MultiLock's Unlock or
// loss would end that hold too.
type MultiLock struct {
	mutexes []*Mutex
	quorum  int
	redlock bool
}

// NewMultiLock returns a lock that is held only when every mutex is.
func NewMultiLock(mutexes ...*Mutex) *MultiLock {
	return &MultiLock{mutexes: mutexes, quorum: len(mutexes)}
}

// NewRedLock returns a lock that is held when a majority of the mutexes,
// len/2+1, were taken within the lease (Redlock's validity rule: the lease
// left after taking them, less a clock-drift allowance, must be positive).
func NewRedLock(mutexes ...*Mutex) *MultiLock {
	return &MultiLock{mutexes: mutexes, quorum: len(mutexes)/2 + 1, redlock: true}
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

// TryLock tries for up to wait (0: one try) and reports whether the lock
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

// check reports why ml cannot make calls with ctx, if it cannot: it has no
// mutexes, a nil one, one lock twice, or, for a RedLock, two mutexes of one
// Client (the quorum needs independent masters).
//
// unlocking lets a member whose Client is closed pass: Unlock still leaves
// the parts on the others; when every member's Client is closed, Unlock has
// nothing to do and fails with ErrClosed.
func (ml *MultiLock) check(ctx context.Context, unlocking bool) error {
	if ml == nil || len(ml.mutexes) == 0 {
		return fmt.Errorf("%w: multilock of no mutexes", ErrInvalidArgument)
	}
	closed := 0
	for i, m := range ml.mutexes {
		if m == nil {
			return fmt.Errorf("%w: multilock mutex %d is nil", ErrInvalidArgument, i)
		}
		if err := m.check(ctx); err != nil {
			if !unlocking || !errors.Is(err, ErrClosed) {
				return m.wrap(err)
			}
			closed++
		}
		for _, prev := range ml.mutexes[:i] {
			switch {
			case prev.c == m.c && prev.keys.Hash() == m.keys.Hash():
				return m.wrap(fmt.Errorf("%w: the lock is in the multilock twice", ErrInvalidArgument))
			case prev.c == m.c && ml.redlock:
				return m.wrap(fmt.Errorf("%w: a redlock needs each mutex from its own Client, on its own master", ErrInvalidArgument))
			}
		}
	}
	if closed == len(ml.mutexes) {
		return fmt.Errorf("%w: every part's Client", ErrClosed)
	}
	return nil
}

// acquire runs tryQuorum until it takes a quorum within the lease, or wait
// (waitForever: until ctx is done) runs out, or a part's Client is closed
// (ErrClosed, after the try it ends). Between tries it sleeps a random
// moment, so that contending clients do not meet in lockstep.
func (ml *MultiLock) acquire(ctx context.Context, wait, lease time.Duration) (context.Context, bool, error) {
	if err := ml.check(ctx, false); err != nil {
		return ctx, false, err
	}
	key := ml.key()
	octx, o := withOwner(ctx)
	deadline := waitDeadline(wait)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		outer := nested(octx, key)
		holds, err := ml.tryQuorum(octx, o, lease, outer.partless(len(ml.mutexes)))
		if err != nil {
			return ctx, false, err
		}
		if holds != nil {
			lctx, err := ml.bindParts(octx, o, lease, holds, key, outer)
			return lctx, err == nil, err
		}
		if err := ml.check(ctx, false); err != nil {
			return ctx, false, err // a part's Client was closed: no try can take it
		}
		pause, ok := capPause(deadline, ml.retryDelay(lease))
		if !ok {
			return ctx, false, nil
		}
		timer.Reset(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx, false, fmt.Errorf("rlock: multilock wait: %w", doneErr(ctx))
		}
	}
}

// tryQuorum asks every node in order, each within nodeTimeout and in its
// owner's turn, and returns the parts taken when they reach the quorum
// within the lease; nil otherwise, after giving back every part taken and
// settling every request whose reply never came.
//
// A try whose owner held a node already where the hold has no part
// (fresh, by node: every node for a new hold), by its own lock on the
// node or another hold of a MultiLock over it, fails with errSharedPart,
// having given back what it took: a part is the owner's hold on its node,
// which a MultiLock's Unlock and loss end, and it would end the other's
// too.
func (ml *MultiLock) tryQuorum(ctx context.Context, o *owner, lease time.Duration, fresh []bool) ([]*hold, error) {
	start := time.Now()
	turns := make([]*turn, len(ml.mutexes))
	granted := make([]bool, len(ml.mutexes))
	taken, failed, shared := 0, 0, false
	for i, m := range ml.mutexes {
		nctx, cancel := context.WithTimeout(ctx, nodeTimeout(lease, m))
		t, err := m.c.take(nctx, m.holdID(o))
		var g grant
		if err == nil {
			turns[i] = t
			g, err = m.ask(nctx, t, lease, false)
		}
		cancel()
		if err == nil && g.acquired {
			granted[i] = true
			taken++
			shared = shared || fresh[i] && g.count > 1
		} else {
			failed++
		}
		if ctx.Err() != nil || failed > len(ml.mutexes)-ml.quorum || shared {
			break
		}
	}
	set := ml.mutexes[0].c.leaseOr(lease)
	won := ctx.Err() == nil && !shared && taken >= ml.quorum && set-time.Since(start)-drift(set) > 0
	holds := make([]*hold, len(ml.mutexes))
	var wg sync.WaitGroup
	for i, t := range turns {
		m := ml.mutexes[i]
		switch {
		case t == nil:
		case won:
			if granted[i] {
				holds[i] = t.hold
			}
			// A node whose reply never came is settled after the lock is
			// handed out, not before: the caller holds the lock, so a level
			// the lost call took is a part of it until the settling call
			// takes it back, and an Unlock of that node waits for it.
			if m.c.goLater() {
				go endTurn(m, ctx, t, false, &m.c.bg)
			} else {
				endTurn(m, ctx, t, false, nil)
			}
		default:
			wg.Add(1)
			go endTurn(m, ctx, t, granted[i], &wg)
		}
	}
	wg.Wait()
	switch {
	case won:
		return holds, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("rlock: multilock: %w", doneErr(ctx))
	case shared:
		return nil, errSharedPart
	}
	return nil, nil
}

// endTurn ends node m's turn t after a try: it gives back the part the
// try took when undo says it fell short, settles a request whose reply
// never came, and then tells wg, if any, that it is done.
func endTurn(m *Mutex, ctx context.Context, t *turn, undo bool, wg *sync.WaitGroup) {
	if wg != nil {
		defer wg.Done()
	}
	defer m.c.give(t)
	if undo {
		m.giveBack(ctx, t, t.count-1, "a multilock part")
	}
	m.settle(ctx, t, nil)
}

// Unlock leaves one level on every node where the hold has a part, all of
// them even when some fail, and reports the failures, joined; a level the
// owner has on another node is another hold's (a lock of its own there),
// which it leaves as Lock does. It returns ErrNotHeld when the owner held
// no part of the lock, and when its hold had ended (fewer nodes than the
// quorum held it, as its context said, or as the nodes said when asked to
// release it): the parts left are released all the same. A ctx that
// carries no hold of ml (one a Lock of ml, or of another handle on the
// same mutexes, returned) releases nothing: a level its owner has on a
// node is then another hold's.
func (ml *MultiLock) Unlock(ctx context.Context) error {
	if err := ml.check(ctx, true); err != nil {
		return err
	}
	mh, _ := ctx.Value(ml.key()).(*multiHold)
	if mh == nil {
		// ctx carries no hold of this MultiLock: a level its owner has on
		// a node is another hold's (a Mutex Lock, another MultiLock), which
		// this Unlock leaves as it is, as Lock leaves it.
		return ErrNotHeld
	}
	held, ended := mh.beginUnlock()
	if held == nil {
		return ErrNotHeld
	}
	octx := carrying(context.WithoutCancel(ctx), mh.o)
	errs := make([]error, len(ml.mutexes))
	var wg sync.WaitGroup
	for i, m := range ml.mutexes {
		wg.Add(1)
		if held[i] {
			go unlockPart(m, octx, &errs[i], &wg)
		} else {
			go passPart(m, octx, mh.o, &errs[i], &wg)
		}
	}
	wg.Wait()
	notHeld, released := 0, 0
	var failures []error
	for _, err := range errs {
		switch {
		case errors.Is(err, ErrNotHeld):
			notHeld++
		case err == nil:
			released++
		default:
			failures = append(failures, err)
		}
	}
	// Fewer nodes than the quorum released a part or may have (a failure):
	// the lock was lost, though this process had not learnt it yet.
	gone := released+len(failures) < ml.quorum
	ended = ended || gone
	mh.endUnlock(gone)
	switch {
	case (notHeld == len(ml.mutexes) || ended) && failures == nil:
		return ErrNotHeld
	case ended:
		return errors.Join(append(failures, ErrNotHeld)...)
	}
	return errors.Join(failures...)
}

// unlockPart unlocks node m for octx into err, and tells wg.
func unlockPart(m *Mutex, octx context.Context, err *error, wg *sync.WaitGroup) {
	defer wg.Done()
	*err = m.Unlock(octx)
}

// passPart is unlockPart for a node where owner o's hold has no part: a
// level of o's there is another hold's (its own lock on the node), not
// this Unlock's to leave. It waits for o's turn on the node, which
// a settling call of the hold's (tryQuorum's endTurn) has until it took
// back a level whose reply never came, and sets err to ErrNotHeld.
func passPart(m *Mutex, ctx context.Context, o *owner, err *error, wg *sync.WaitGroup) {
	defer wg.Done()
	*err = ErrNotHeld
	ctx, cancel := m.c.detached(ctx)
	defer cancel()
	if t, terr := m.c.take(ctx, m.holdID(o)); terr == nil {
		m.c.give(t)
	}
}

// nodeTimeout bounds one node's acquire in a try: small against the
// lease, so that a slow node cannot eat the validity of the others.
func nodeTimeout(lease time.Duration, m *Mutex) time.Duration {
	lease = m.c.leaseOr(lease)
	return min(max(lease/10, 50*time.Millisecond), time.Second)
}

// retryDelay is a random pause between tries, up to a tenth of the lease
// and at most 200 ms.
func (ml *MultiLock) retryDelay(lease time.Duration) time.Duration {
	lease = ml.mutexes[0].c.leaseOr(lease)
	limit := min(max(lease/10, 10*time.Millisecond), 200*time.Millisecond)
	return time.Duration(rand.Int64N(int64(limit))) + time.Millisecond
}
