package rlock

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/rlock/rlock/lua"
)

// A Mutex passes from one owner to a waiter of the same Client in one
// call. A waiter asleep between attempts (waitParked) parks in its
// Client's lot; an Unlock that leaves no level claims the waiter parked
// longest on the lock, takes its turn (never waiting for it), and names it
// as heir to the release script, which then hands the lock to it rather
// than freeing it (lua/release.lua): one round trip instead of a release,
// a message, and the waiter's own acquire. The claimer records the heir's
// grant in the heir's turn, as the heir's acquire would have, gives the
// turn back, pokes the heir, which binds the grant to its context
// (inherit), and yields its processor to it. The heir's call has a number
// reserved before the release's first call, so the request protocol
// covers it: a resend answers as the call that handed over, and when the
// release's outcome stays unknown the heir's turn keeps that number as
// unsettled, which its next call fences.
//
// A Mutex's script hands over at most eight times in a row while another
// Client is recorded as waiting (lua/waiting.lua, lua/release.lua): once
// another Client's waiter is refused, the Client passing the lock around
// yields to it within eight hand-overs, after which a release frees the
// lock and wakes that Client. (A hand-over costs one round trip, a wake-up
// in another Client two and a message.) A FairMutex's
// (lua/fair_release.lua) hands over only to the waiter at the head of the
// queue in Redis, so its order across Clients is kept; its waiters park in
// the queue's order (fairqueue.go), so the one claimed is the head as a
// rule, and when it is not, the head is handed the lock by a message.

// unlockHandingOver is unlock for a Mutex and a FairMutex (their Unlock):
// a release that leaves no level names as heir the waiter of this Client
// parked longest on the lock (heir). Their release scripts take the heir
// as ARGV[8..10] and answer Handed when they hand the lock to it.
func (l *lock) unlockHandingOver(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	tr := l.traceRelease(ctx)
	err := l.handOverLevel(ctx, &tr)
	tr.end(l, err)
	return err
}

// handOverLevel is unlockHandingOver's request, reported to tr.
func (l *lock) handOverLevel(ctx context.Context, tr *releaseTrace) error {
	t, uctx, cancel, err := l.unlockTurn(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	defer l.c.give(t)
	var result released
	if heir, ht := l.heir(t); heir != nil {
		result, err = l.releaseTo(uctx, t, heir, ht)
	} else {
		result, err = l.release(uctx, t, t.count-1, false)
	}
	return l.unlocked(t, tr, result, err)
}

// heir claims the waiter to name as heir in the release of turn t, and
// takes its turn; or returns nil: only a release to no level hands over,
// and not with WithReplicaAck, where the heir's grant would need an
// acknowledgement of its own.
func (l *lock) heir(t *turn) (*parked, *turn) {
	if t.count != 1 || l.c.cfg.replicas > 0 {
		return nil, nil
	}
	return l.c.lot.claim(l)
}

// releaseTo is release to no level, naming heir, a claimed waiter whose
// turn ht the caller has: the script hands the lock to heir rather than
// freeing it, if it may, and ht records what it did (bequeath).
func (l *lock) releaseTo(ctx context.Context, t *turn, heir *parked, ht *turn) (released, error) {
	buf := callBufs.Get().(*callBuf)
	defer freeCall(buf)
	call := l.releaseCallIn(buf, t.id.field, 0, false)
	heirSeq := l.c.seq.Add(1)
	buf.args[6], buf.args[7], buf.args[8] = "0", ht.id.field, strconv.FormatUint(heirSeq, 10)
	buf.args[9], buf.args[10] = l.c.millis(l.c.leaseOr(heir.lease)), flag(heir.lease == 0)
	call.args = buf.args[:11]
	t.releasingAll()
	prior := t.unsettled
	var into [2]int64
	reply, _, sent, err := l.c.exchangeInto(into[:0], ctx, t, l.kind.release, call, false)
	l.bequeath(ctx, heir, ht, heirSeq, reply, err, sent)
	return l.recordRelease(t, call, 0, prior, reply, err)
}

// bequeath records in heir's turn t what the release that named it did,
// given its reply or err, the number heirSeq reserved for the heir's call,
// and when the release was first sent: the heir holds a level from the
// grant, as its own acquire would have recorded it; or, when no reply
// came, the hand-over may have applied, and the heir's next call fences
// it. A level the watchdog refuses is given back. It runs before the
// releasing owner's hold ends, so the lot never finds the lock without a
// counted hold between the two (unheld).
func (l *lock) bequeath(ctx context.Context, heir *parked, t *turn, heirSeq uint64, reply []int64, err error, sent time.Time) {
	got := err == nil && len(reply) == 2 && reply[0] == int64(lua.Handed)
	if got {
		got = l.keep(ctx, t, grant{acquired: true, count: 1, token: reply[1]}, sent, heir.lease) == nil
	}
	if err != nil {
		t.unsettled = heirSeq
	}
	// The heir wakes to bind its grant, or to ask: when the outcome is
	// unknown, or when Redis has no record of it.
	l.c.lot.settle(l.c, l.keys.Hash(), heir, t, got, got || err != nil || heir.behind)
	if got {
		// The heir holds the lock and its wake-up is queued on this
		// processor: run it now, as sync.Mutex hands over in starvation
		// mode, rather than after whatever this goroutine does next (a
		// FairMutex owner's next Lock sends its request first). The heir
		// needs nothing this goroutine still has.
		runtime.Gosched()
	}
}
