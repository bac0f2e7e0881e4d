package rlock

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/rlock/rlock/lua"
)

// Permits that travel (Redisson's RPermitExpirableSemaphore): a permit
// named by an id rather than carried by a context, which one process takes
// and another gives back, for work handed from a front end to a worker. It
// is a holder of the semaphore like an owner is, the field
// 'permit:<id>' with its own lease (permit:<id>#exp, in Redis time), so it
// draws from the same permits as Acquire, its release wakes the same
// waiters, and an operator sees it among the holders.
//
// Its acquire is a request of the protocol whose owner is the permit
// itself: the id is drawn before the first call, every call of the request
// names it, so a resend re-grants the one permit and a request given up is
// settled by a release of that permit (SemaphoreRelease) that fences its
// lost calls. Its release comes from any Client: the request of that
// Client, in its turn on the semaphore, and recorded there, so that a
// resend of a release that applied answers as the first call did
// (semaphore_permit_release.lua).

// permitPrefix starts the holder field of a travelling permit. A Client's
// owner fields start with its 22-character id, so they never do.
const permitPrefix = "permit:"

// AcquirePermit waits until a permit of s is free, takes it for lease, and
// returns its id. The permit is bound to no context and no Client: pass
// the id on, and give the permit back with ReleasePermit, from this Client
// or any other. It comes back by itself when lease runs out, in Redis's
// time, unless ExtendPermit lengthened it; nothing renews it. Travelling
// permits and the ones Acquire takes draw from the same permits, and a
// waiter of either kind wakes when a permit of either kind comes back.
//
// lease must be at least MinLease: a permit nobody holds in a context
// must end by itself if its holder vanishes, so there is no default and
// no watchdog (ErrInvalidDuration, which also matches ErrInvalidArgument).
// Ids are 26 characters of crypto/rand base32 (130 bits): unguessable.
//
// AcquirePermit returns an error when ctx is done first (wrapping
// ctx.Err()), when Redis fails, and after Close (ErrClosed). A call that
// returns an error holds no permit, and none of its requests takes one
// later: a request whose reply was lost is settled before it returns.
// Unless the error wraps ErrOutcomeUnknown (the settling call got no
// answer either): then a permit nobody knows may be held until its lease
// ends.
func (s *Semaphore) AcquirePermit(ctx context.Context, lease time.Duration) (string, error) {
	id, _, err := s.acquirePermit(ctx, waitForever, lease)
	return id, err
}

// TryAcquirePermit is AcquirePermit waiting for up to wait (0: a single
// attempt). When no permit could be taken in time it returns "", false and
// a nil error.
func (s *Semaphore) TryAcquirePermit(ctx context.Context, wait, lease time.Duration) (string, bool, error) {
	if wait < 0 {
		return "", false, s.engine().wrap(fmt.Errorf("%w: wait %v is negative", ErrInvalidDuration, wait))
	}
	return s.acquirePermit(ctx, wait, lease)
}

// ReleasePermit gives back the permit with id, which AcquirePermit or
// TryAcquirePermit returned, on this Client or any other. It returns an
// error matching ErrNotHeld, and frees nothing, when no live permit has
// that id: it was never taken (or is not an id AcquirePermit returns,
// which matches ErrInvalidArgument too), its lease ran out, or it was
// given back already. Like Mutex.Unlock it runs even when ctx is already
// done, bounded by the retry timeout.
//
// It applies once: a call resent after a lost reply frees no second
// permit, and answers nil when an earlier call of the request gave the
// permit back. The ReleasePermit calls of one Client on one semaphore take
// turns (one round trip each). When it fails with the outcome unknown
// (Redis unreachable for the whole retry timeout), the permit may still
// come back later, or at the end of its lease.
func (s *Semaphore) ReleasePermit(ctx context.Context, id string) error {
	l := s.engine()
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	if err := checkPermitID(id); err != nil {
		return l.wrap(err)
	}
	rctx, cancel := l.c.detached(ctx)
	defer cancel()
	t, first, err := l.clientTurn(rctx)
	if err != nil {
		return l.wrap(fmt.Errorf("rlock: release permit: %w", err))
	}
	defer l.c.give(t)
	k := l.keys.Value()
	call := scriptCall{
		keys: []string{k.Hash, k.Channel, k.Fence},
		args: []string{l.c.id, "", first, l.c.publish, "", l.c.fenceMs, permitPrefix + id},
	}
	reply, _, _, err := l.c.exchange(rctx, t, lua.SemaphorePermitRelease, call, false)
	if err != nil {
		return l.wrap(fmt.Errorf("rlock: release permit: %w", err))
	}
	result, _, err := parseRelease(reply)
	switch {
	case err != nil:
		return l.wrap(err)
	case result == notHeld:
		return l.wrap(fmt.Errorf("%w: permit %s", ErrNotHeld, id))
	}
	return nil
}

// ExtendPermit makes the lease of the permit with id end no earlier than
// lease from now (in Redis's time), from any Client; it never shortens it.
// It returns an error matching ErrNotHeld when no live permit has that id:
// a permit whose lease ran out is not revived. lease must be at least
// MinLease. It runs once: it applies before it returns or never, unless
// its error wraps ErrOutcomeUnknown.
func (s *Semaphore) ExtendPermit(ctx context.Context, id string, lease time.Duration) error {
	l := s.engine()
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	if err := checkPermitID(id); err != nil {
		return l.wrap(err)
	}
	if err := validLease(lease); err != nil {
		return l.wrap(err)
	}
	n, err := l.once(ctx, lua.SemaphorePermitExtend, l.keys.Value().Fence, []string{l.keys.Hash()}, []string{permitPrefix + id, millis(lease)})
	switch {
	case err != nil:
		return l.wrap(fmt.Errorf("rlock: extend permit: %w", err))
	case n == 0:
		return l.wrap(fmt.Errorf("%w: permit %s", ErrNotHeld, id))
	}
	return nil
}

// acquirePermit takes a permit for lease, waiting up to wait (waitForever:
// until ctx is done) on the semaphore's channel as lock.acquire does: one
// attempt, then subscribe, then attempt again on each wake-up or when the
// earliest holder's lease would end. It returns the permit's id, or "" and
// false when the wait ran out.
func (s *Semaphore) acquirePermit(ctx context.Context, wait, lease time.Duration) (string, bool, error) {
	l := s.engine()
	if err := l.check(ctx); err != nil {
		return "", false, l.wrap(err)
	}
	if err := validLease(lease); err != nil {
		return "", false, l.wrap(err)
	}
	if ctx.Err() != nil {
		return "", false, l.wrap(fmt.Errorf("rlock: acquire permit: %w", doneErr(ctx)))
	}
	id := rand.Text()
	g, err := l.takePermit(ctx, id, lease, false)
	if err == nil && !g.acquired && wait != 0 {
		g, err = l.waitForPermit(ctx, id, wait, lease)
	}
	switch {
	case err != nil:
		return "", false, l.wrap(err)
	case !g.acquired:
		return "", false, nil
	}
	return id, true, nil
}

// waitForPermit is acquirePermit's wait: it subscribes to the channel
// first and only then attempts, so a release between the two cannot be
// missed (see waitOnChannel, whose loop this is for a permit).
func (l *lock) waitForPermit(ctx context.Context, id string, wait, lease time.Duration) (grant, error) {
	w, deadline, err := l.subscribe(ctx, wait, "")
	if w == nil {
		return grant{}, err
	}
	var g grant
	for {
		if g, err = l.takePermit(ctx, id, lease, true); err != nil || g.acquired {
			break
		}
		pause, ok := capPause(deadline, nextCheck(g.pttl, l.c.cfg.lease))
		if !ok {
			break
		}
		if err = sleep(ctx, w, pause); err != nil {
			break
		}
	}
	// A wake-up this waiter was handed but did not turn into a permit goes
	// on to the next waiter.
	w.Done(g.acquired)
	return g, err
}

// takePermit runs one acquire of the permit with id, in the permit's turn,
// bounded by the retry timeout. A request whose reply was lost and that
// its caller gave up, or a grant that came to a done ctx or that too few
// replicas acknowledged, is settled: a release of the permit supersedes
// the lost calls and gives back what one of them took.
func (l *lock) takePermit(ctx context.Context, id string, lease time.Duration, waiting bool) (grant, error) {
	t, err := l.c.take(ctx, holdID{key: l.keys.Hash(), field: permitPrefix + id})
	if err != nil {
		return grant{}, fmt.Errorf("rlock: acquire permit: %w", err)
	}
	defer l.c.give(t)
	rctx, cancel := context.WithTimeout(ctx, l.c.cfg.retryTimeout)
	acked := l.c.cfg.replicas > 0
	reply, acks, sent, err := l.c.exchange(rctx, t, l.kind.acquire, l.acquireCall(t.id.field, 1, lease, waiting), acked)
	cancel()
	var g grant
	if err == nil {
		g, err = parseGrant(reply)
	}
	if err == nil && g.acquired {
		err = l.keepPermit(ctx, t, acked, acks, sent)
	}
	if err != nil {
		err = l.settle(ctx, t, err)
		// The id is never sent again (the acquire ends): were the settling
		// call lost too, nothing later could fence with it, so the turn
		// keeps nothing.
		t.unsettled = 0
		return grant{}, fmt.Errorf("rlock: acquire permit: %w", err)
	}
	return g, nil
}

// keepPermit checks a permit just granted in turn t, whose turn the
// caller has, and gives it back when it cannot be kept: too few replicas
// acknowledged it (with WithReplicaAck; acked, and acks of them, for the
// request first sent at sent), or ctx ended meanwhile, so that no caller
// would learn its id.
func (l *lock) keepPermit(ctx context.Context, t *turn, acked bool, acks int64, sent time.Time) error {
	if acked {
		l.replicaAcked(ctx, acks, sent)
		if acks < int64(l.c.cfg.replicas) {
			return l.unreplicated(ctx, t, t.count, acks)
		}
	}
	if ctx.Err() != nil {
		l.giveBack(ctx, t, 0, "a permit granted to a done context")
		return ctx.Err()
	}
	return nil
}

// permitIDLen is the length of rand.Text's ids.
const permitIDLen = 26

// checkPermitID reports why id names no permit: it is not of the form
// AcquirePermit returns (26 characters of base32), so no permit has it.
// An id of another form could name another field of the hash.
func checkPermitID(id string) error {
	valid := len(id) == permitIDLen
	for i := 0; valid && i < len(id); i++ {
		c := id[i]
		valid = 'A' <= c && c <= 'Z' || '2' <= c && c <= '7'
	}
	if !valid {
		return fmt.Errorf("%w: %w: %q is not a permit id", ErrNotHeld, ErrInvalidArgument, id)
	}
	return nil
}
