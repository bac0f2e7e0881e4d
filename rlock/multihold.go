package rlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// multiKey is the context key under which a MultiLock context carries its
// multiHold: the MultiLock's nodes (each Client's id and lock key) and
// quorum, so that another handle on the same locks finds the hold, to
// re-enter or unlock it, as a Mutex handle finds its lock's.
type multiKey struct{ nodes string }

// key returns ml's multiKey, built once per call of Lock or Unlock. ml
// has passed check.
func (ml *MultiLock) key() multiKey {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", ml.quorum)
	for _, m := range ml.mutexes {
		b.WriteString("\n" + m.c.id + " " + m.keys.Hash())
	}
	return multiKey{b.String()}
}

// multiHold is one owner's hold on a MultiLock: a part (a single-node hold)
// per node that granted it. With the watchdog, a part that is lost is taken
// again; the hold ends when fewer parts than the quorum remain, or with the
// final Unlock.
type multiHold struct {
	ml    *MultiLock
	o     *owner
	lease time.Duration // 0: the watchdogs renew the parts

	life lifetime

	mu        sync.Mutex
	parts     []*hold // by node; nil where the node holds no part
	had       []bool  // by node: the hold has had a part there, which is taken again once lost
	depth     int     // levels held: 1, and 1 more per re-entry, 1 less per Unlock
	ended     bool
	cause     error          // why it ended, once it has: set with ended
	over      chan struct{}  // closed once whoever set ended has ended life
	unlocking int            // Unlock calls under way: no part is retaken meanwhile
	poke      chan struct{}  // closed when an Unlock begins, to stop retaking
	retaking  sync.WaitGroup // parts being taken again
}

// bindParts returns the context for a tryQuorum that took parts: for a
// re-entry of outer, the hold ctx carried when the try began (nested),
// which may add parts, ctx itself, or ctx bound to the hold when ctx does
// not end with it (a context detached from it); else a new hold's
// context, found under key. A re-entry that finds outer ended meanwhile (a
// final Unlock or a loss came first) fails with the hold's cause, and
// gives back the levels it took. A new hold whose ctx is done already
// gives its parts back and fails with ctx's cause.
func (ml *MultiLock) bindParts(ctx context.Context, o *owner, lease time.Duration, parts []*hold, key multiKey, outer *multiHold) (context.Context, error) {
	if mh := outer; mh != nil {
		mh.mu.Lock()
		if mh.ended {
			cause := mh.cause
			mh.mu.Unlock()
			ml.giveBack(o, parts)
			return ctx, fmt.Errorf("rlock: multilock: %w", cause)
		}
		mh.depth++
		for i, h := range parts {
			if h != nil {
				mh.setPart(i, h)
			}
		}
		mh.mu.Unlock()
		if ctx.Done() == nil {
			return mh.life.bind(ctx, nil), nil
		}
		return ctx, nil
	}
	mh := &multiHold{ml: ml, o: o, lease: lease, parts: make([]*hold, len(parts)), had: make([]bool, len(parts)), depth: 1, poke: make(chan struct{}), over: make(chan struct{})}
	mh.mu.Lock()
	for i, h := range parts {
		if h != nil {
			mh.setPart(i, h)
		}
	}
	mh.mu.Unlock()
	// A part may have ended since its node granted it (its Client closed,
	// say), before its watcher could tell: the hold ends now if that left
	// it short of the quorum, rather than just after Lock returned.
	for _, h := range parts {
		if h != nil && !h.active() {
			mh.checkQuorum(h.life.Cause())
			break
		}
	}
	lctx := mh.life.bind(context.WithValue(ctx, key, mh), nil)
	if lctx.Err() != nil {
		// ctx ended meanwhile (a final Unlock of the hold it carried came
		// first): the parts go back, as Lock never succeeds with a done
		// context.
		cause := context.Cause(lctx)
		_ = ml.Unlock(lctx)
		return ctx, fmt.Errorf("rlock: multilock: %w", cause)
	}
	return lctx, nil
}

// giveBack leaves, for owner o, one level on every node where parts has
// a part: a re-entry's, which its hold's end left to nobody.
func (ml *MultiLock) giveBack(o *owner, parts []*hold) {
	octx := carrying(context.Background(), o)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, h := range parts {
		if h != nil {
			wg.Add(1)
			go unlockPart(ml.mutexes[i], octx, &errs[i], &wg)
		}
	}
	wg.Wait()
}

// partless reports, for each of n nodes, whether mh has no part there: a
// try for mh takes a new part there. Every node for no hold (nil).
func (mh *multiHold) partless(n int) []bool {
	fresh := make([]bool, n)
	if mh == nil {
		for i := range fresh {
			fresh[i] = true
		}
		return fresh
	}
	mh.mu.Lock()
	defer mh.mu.Unlock()
	for i, h := range mh.parts {
		fresh[i] = h == nil
	}
	return fresh
}

// nested returns the hold of ml, found under its key, that ctx carries, if
// it has not ended: a Lock with ctx re-enters it.
func nested(ctx context.Context, key multiKey) *multiHold {
	if mh, ok := ctx.Value(key).(*multiHold); ok && mh.life.Err() == nil {
		return mh
	}
	return nil
}

// setPart records h as the part of node i and watches it end. The caller
// holds mh.mu.
func (mh *multiHold) setPart(i int, h *hold) {
	if mh.parts[i] == h {
		return
	}
	mh.parts[i], mh.had[i] = h, true
	c := h.client()
	go mh.watchPart(c, c.goLater(), i, h)
}

// watchPart waits for node i's part h, of Client c, to end, and reacts.
// Every part ends (Unlock, a loss, its lease, Close), and its watcher
// with it. c's Close waits for it when counted (goLater, before Close
// began), so that a hold that Close leaves short of its quorum has its
// context done when Close returns.
func (mh *multiHold) watchPart(c *Client, counted bool, i int, h *hold) {
	if counted {
		defer c.bg.Done()
	}
	<-h.life.Done()
	mh.partEnded(i, h)
}

// partEnded reacts to the end of node i's part h. The end that this
// hold's Unlock brings is no loss (endUnlock sees to it); any other is:
// the hold ends once fewer parts than the quorum remain; otherwise, when
// the watchdogs renew this hold, a part lost (not released: another
// handle's Unlock of the owner's) is taken again.
func (mh *multiHold) partEnded(i int, h *hold) {
	lost := errors.Is(h.life.Cause(), ErrLockLost)
	mh.mu.Lock()
	if mh.ended || mh.parts[i] != h || !lost && mh.unlocking > 0 {
		mh.mu.Unlock()
		return
	}
	mh.parts[i] = nil
	retake := lost && mh.lease == 0 && mh.unlocking == 0 && !errors.Is(h.life.Cause(), ErrClosed)
	if retake {
		mh.retaking.Add(1)
	}
	mh.mu.Unlock()
	mh.checkQuorum(h.life.Cause())
	if retake {
		mh.retake(i)
	}
}

// retake takes node i's part again, at once and then every renewal period
// (a node restarted empty may not answer yet), until it has it (or a
// re-entry took it), an Unlock begins, the hold ends, or the node's Client
// is closed; then it tells mh.retaking, which the caller added it to.
func (mh *multiHold) retake(i int) {
	defer mh.retaking.Done()
	period := mh.ml.mutexes[i].c.cfg.lease / 3
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		mh.mu.Lock()
		stop, poke := mh.ended || mh.unlocking > 0 || mh.parts[i] != nil && mh.parts[i].active(), mh.poke
		mh.mu.Unlock()
		if stop {
			return
		}
		select {
		case <-timer.C:
		case <-poke:
			return
		case <-mh.life.Done():
			return
		case <-mh.ml.mutexes[i].c.closed:
			return
		}
		if mh.retakeOnce(i) {
			return
		}
		timer.Reset(period)
	}
}

// retakeOnce tries once, each call within the node timeout, to take node
// i's part again, as deep as the hold (a level per call until the node's
// count is the hold's depth, so that nested Unlocks leave it as they leave
// the others, also when a re-entry took it meanwhile), and reports whether
// to stop trying: it has the part, or the node's Client is closed. The
// calls carry the hold's owner, so that the part taken is the hold's; the
// part is read from the last call's lock context, which carries it still
// once that call is over.
func (mh *multiHold) retakeOnce(i int) bool {
	m := mh.ml.mutexes[i]
	if m.check(context.Background()) != nil {
		return true
	}
	base := carrying(context.Background(), mh.o)
	var lctx context.Context
	for {
		ctx, cancel := context.WithTimeout(base, nodeTimeout(0, m))
		next, g, err := m.attempt(ctx, m.holdID(mh.o), 0, false)
		cancel()
		if err != nil || !g.acquired {
			m.c.cfg.logger.Debug("rlock: multilock could not take a lost part again yet", "key", m.keys.Hash(), "err", err)
			if lctx == nil {
				return errors.Is(err, ErrClosed)
			}
			break // a part shallower than the hold is still a part
		}
		mh.mu.Lock()
		adopted := lctx == nil && g.count > 1 && mh.parts[i] == nil
		deep := g.count >= mh.depth
		mh.mu.Unlock()
		if adopted {
			// The owner holds the node by other means (its own lock
			// there), which is not the hold's to take: the level goes
			// back, and the part is taken once that lock is let go.
			_ = m.Unlock(next)
			return false
		}
		lctx = next
		if deep {
			break
		}
	}
	part, ok := m.carried(lctx)
	if !ok {
		return false
	}
	mh.mu.Lock()
	ended := mh.ended
	if !ended {
		mh.setPart(i, part)
	}
	mh.mu.Unlock()
	if ended {
		// The hold ended while this retake was under way: the part it
		// took is nobody's, and goes.
		for part.active() {
			if m.Unlock(lctx) != nil {
				break // a failed Unlock ends the part all the same
			}
		}
	}
	return true
}

// checkQuorum ends the hold once fewer parts than the quorum are held; the
// parts left stop being renewed, and Unlock still releases them. lost is
// the cause of the part that just ended, whose text the hold's cause
// carries (a user learns why the quorum was lost, as the lease deadline
// of a node it still reached); a part ended by its Client's Close ends
// the hold with a cause that matches ErrClosed too.
func (mh *multiHold) checkQuorum(lost error) {
	mh.mu.Lock()
	held := 0
	for _, h := range mh.parts {
		if h != nil && h.active() {
			held++
		}
	}
	if mh.ended || held >= mh.ml.quorum {
		mh.mu.Unlock()
		return
	}
	quorum := errQuorumLost
	if errors.Is(lost, ErrClosed) {
		quorum = errQuorumClosed
	}
	cause := fmt.Errorf("%w; the last part lost: %v", quorum, lost) // its text only: errors.Is answers as for the quorum
	mh.ended, mh.cause = true, cause
	parts := slices.Clone(mh.parts)
	mh.mu.Unlock()
	for _, h := range parts {
		if h != nil {
			h.finish(cause)
		}
	}
	mh.life.end(cause)
	close(mh.over)
}

// beginUnlock claims one of the hold's levels for an Unlock, stops parts
// from being taken again and waits for any being taken now, so that no
// part outlives the Unlock. It reports which nodes hold a part, and
// whether the hold had ended already (its quorum was lost): the owner
// holds the MultiLock no more, whatever parts are left. held is nil when
// every level is claimed by Unlocks under way or done (a final Unlock came
// first): this Unlock has no level to leave on any node, and concurrent
// Unlocks of one hold leave one level each, in whatever order their calls
// reach the nodes.
func (mh *multiHold) beginUnlock() (held []bool, ended bool) {
	mh.mu.Lock()
	if mh.unlocking >= mh.depth {
		mh.mu.Unlock()
		return nil, true
	}
	ended = mh.ended
	mh.unlocking++
	close(mh.poke)
	mh.poke = make(chan struct{})
	mh.mu.Unlock()
	mh.retaking.Wait()
	mh.mu.Lock()
	defer mh.mu.Unlock()
	held = make([]bool, len(mh.parts))
	for i, h := range mh.parts {
		held[i] = h != nil
	}
	return held, ended
}

// endUnlock ends the hold once no part is held any more: as lost when
// gone says the nodes found fewer parts than the quorum to release. A
// hold that lives on (a nested Unlock) takes again, when the watchdogs
// renew it, the parts lost meanwhile, which beginUnlock stopped retaking,
// and a part the Unlock freed on a node where it was shallower than the
// hold (a re-entry that node did not grant); and it ends, as lost, when
// fewer parts than the quorum are left.
func (mh *multiHold) endUnlock(gone bool) {
	mh.mu.Lock()
	mh.unlocking--
	mh.depth--
	live := 0
	for _, h := range mh.parts {
		if h != nil && h.active() {
			live++
		}
	}
	if live == 0 || mh.depth <= 0 {
		if mh.ended {
			// A loss ended it first (checkQuorum), and may not have ended
			// its contexts yet: the Unlock returns once it has.
			mh.mu.Unlock()
			<-mh.over
			return
		}
		mh.ended, mh.cause = true, context.Canceled
		if gone {
			mh.cause = fmt.Errorf("%w; %w", errQuorumLost, errPartsGone)
		}
		cause, parts := mh.cause, slices.Clone(mh.parts)
		mh.mu.Unlock()
		for _, h := range parts {
			if h != nil {
				h.finish(cause) // a level left by the final Unlock is renewed no more: its lease frees it
			}
		}
		mh.life.end(cause)
		close(mh.over)
		return
	}
	if !mh.ended && mh.lease == 0 && mh.unlocking == 0 {
		for i, h := range mh.parts {
			// A part lost while the Unlock ran, or freed by it where it
			// was shallower than the hold; one lost since is left to
			// partEnded, which retakes it.
			if mh.had[i] && (h == nil || !h.active() && !errors.Is(h.life.Cause(), ErrLockLost)) {
				mh.parts[i] = nil
				mh.retaking.Add(1)
				go mh.retake(i)
			}
		}
	}
	mh.mu.Unlock()
	if gone {
		mh.checkQuorum(errPartsGone)
	} else {
		mh.checkQuorum(errShallowPart)
	}
}

var (
	// errPartsGone: an Unlock found fewer parts than the quorum to
	// release, before this process learnt of the losses.
	errPartsGone = errors.New("the nodes held fewer parts than the quorum at Unlock")
	// errShallowPart: a nested Unlock may leave fewer parts than the
	// quorum when a node that did not grant a re-entry held fewer levels.
	errShallowPart = errors.New("a nested Unlock released a part shallower than the hold")
)
