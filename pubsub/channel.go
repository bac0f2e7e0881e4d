package pubsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/alarm"
)

// WakeAll is the message that wakes every waiter of a channel; a message
// that starts with Addressed wakes the waiters it names; any other message
// wakes one.
const WakeAll = "all"

// Addressed starts a message for the waiters of one tag (SubscribeAs):
// "@<tag> <note>" wakes every waiter of the channel named tag, hands it
// note (Waiter.Note), and wakes nobody else; with no such waiter in this
// Subscriber it does nothing, as the message is for another process. A tag
// holds no space; the note may.
//
// "@<id>", where id is the Subscriber's own (New), is a wake-up for this
// Subscriber alone: it wakes one of the channel's waiters, as an
// unaddressed message does, and no waiter of any other Subscriber. So a
// publisher that knows which process waits longest wakes one waiter in the
// whole deployment rather than one in every process.
//
// A publisher sends such a message on the addressee's Inbox, where only
// that Subscriber listens; on the channel itself it works too.
const Addressed = "@"

// Inbox is the channel that carries the messages addressed to Subscriber
// id, or to waiters of its tags, about channel: channel, Addressed and id.
// A Subscriber with an id subscribes to it beside channel, in one command,
// and takes messages from both alike. Sent there, an addressed message
// reaches one process: on channel, Redis would write it to every process
// subscribed, and each would wake to drop it. On a Cluster, channel needs
// a hash tag, so that its inbox shares its slot (ErrNoHashTag; rlock's
// channels have one).
func Inbox(channel, id string) string {
	return channel + Addressed + id
}

// Deadline starts the note of an addressed message that sets a time rather
// than wakes: "@<tag> next <ms>" wakes the waiters named tag no later than
// ms from its arrival, and no sooner than they would have woken anyway
// (WakeAfter). A fair lock's release tells the waiter after the new holder
// so when that holder's lease ends before the waiter would ask anyway:
// that waiter must ask then, in case the holder died, and need not stir
// before.
const Deadline = "next "

// unsubscribeTimeout bounds the UNSUBSCRIBE that ends a subscription.
// rueidis resends it over a broken connection, so without a bound an
// unreachable Redis would hold the channel's goroutine, and Close, forever.
const unsubscribeTimeout = time.Second

// channel is one channel that local waiters wait on: their queue and the
// goroutine that owns the channel's subscription. Every field but s,
// name, listens and done is guarded by s.mu.
type channel struct {
	s    *Subscriber
	name string
	done chan struct{} // closed when run returns

	// listens is what the subscription listens on: name and, for a
	// Subscriber with an id, its Inbox.
	listens []string

	waiters  []*Waiter          // the queue, longest-waiting first
	notes    map[*Waiter]string // the notes addressed to waiters (deliver) not yet taken
	failures map[*Waiter]error  // why Subscribe fails, for the waiters failed and not yet told
	current  *attempt           // the subscription attempt under way; nil between attempts and once stopped

	// idle ends the subscription once the queue has stayed empty for the
	// Subscriber's linger; nil until the queue first empties. While the
	// queue is empty and current is set, the subscription lingers.
	idle *time.Timer

	// owed says that an untagged waiter left without the lock while ready
	// waiters remained, one of which may have taken the lock already: the
	// last ready waiter to leave is told so (leave) even when it took the
	// lock.
	owed bool
}

// attempt is one Receive call: one subscription of the channel, which
// rueidis may make again on a new connection after a connection loss.
type attempt struct {
	ctx       context.Context
	stop      context.CancelFunc // ends the Receive call
	confirmed bool               // Redis confirmed the subscription at least once; guarded by s.mu
	remade    int                // confirmations since the first: rueidis made it again; guarded by s.mu
}

// remakeLimit is how many times rueidis may make an attempt's
// subscription again after lost connections before the attempt is
// stopped and a fresh one started. rueidis retries inside one Receive
// call after a delay of about 2^n µs for its n-th retry, and never resets
// n: after some twenty losses, each later one would leave the channel
// unsubscribed for a second. A fresh call starts n over; a restart costs
// an UNSUBSCRIBE and a SUBSCRIBE, and a message published between them is
// lost (the fresh confirmation wakes every waiter), hence not on every
// loss.
const remakeLimit = 8

func newChannel(s *Subscriber, name string) *channel {
	c := &channel{s: s, name: name, listens: []string{name}, done: make(chan struct{})}
	if s.id != "" {
		c.listens = append(c.listens, Inbox(name, s.id))
	}
	return c
}

// join appends a new waiter named tag to the queue, ready at once when the
// current subscription is confirmed. The caller holds s.mu.
func (c *channel) join(tag string) *Waiter {
	w := newWaiter(c, tag)
	if c.current != nil && c.current.confirmed {
		w.subscribed = true // ready at once: no channel to wait on
	} else {
		w.ready = make(chan struct{})
	}
	c.waiters = append(c.waiters, w)
	return w
}

// leave takes w, which took the lock if acquired, out of the queue;
// handOn passes a wake-up to the next ready waiter. When the queue is
// empty, the subscription is left to linger (the Subscriber's linger), and
// then ends: run unsubscribes. leave reports whether no ready waiter is
// left: a waiter still in Subscribe cannot take a wake-up (it asks for
// itself once its subscription is confirmed, and its Subscribe may fail
// instead), so a wake-up w leaves behind is nobody's here. To a w that
// took the lock it reports that only when one left without it before
// while others were ready (owed): what the publisher keeps of this
// Subscriber may have been left behind. For a waiter named by a tag it reports whether
// no waiter of that tag, ready or not, is left: the tag's waiters are one
// owner's calls, which share what Redis keeps for the owner (its place in
// a fair lock's queue), and the last of them takes it back. The caller
// holds s.mu.
func (c *channel) leave(w *Waiter, handOn, acquired bool) bool {
	if i := slices.Index(c.waiters, w); i >= 0 {
		c.waiters = slices.Delete(c.waiters, i, i+1)
	}
	w.left = true
	delete(c.notes, w)
	if handOn {
		c.wakeOne()
	}
	if len(c.waiters) == 0 {
		if c.idle == nil {
			c.idle = time.AfterFunc(c.s.linger, c.expire)
		} else {
			c.idle.Reset(c.s.linger)
		}
	}
	if w.tag != "" {
		return !slices.ContainsFunc(c.waiters, func(o *Waiter) bool { return o.tag == w.tag })
	}
	switch last := !slices.ContainsFunc(c.waiters, func(o *Waiter) bool { return o.subscribed }); {
	case !last:
		c.owed = c.owed || !acquired
		return false
	case acquired && !c.owed:
		return false
	}
	c.owed = false
	return true
}

// expire ends a lingering subscription whose queue is still empty: it
// stops the subscription attempt under way, and run unsubscribes.
func (c *channel) expire() {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if len(c.waiters) > 0 || c.current == nil {
		return
	}
	c.current.stop()
	c.current = nil
}

// wakeOne wakes the longest-waiting ready waiter that has no wake-up
// pending, and records that it owes the lock a re-check. Waiters whose
// wake-up is still pending are skipped: they will re-check anyway. The
// caller holds s.mu.
func (c *channel) wakeOne() {
	for _, w := range c.waiters {
		if w.subscribed && w.nudge() {
			w.woken = true
			return
		}
	}
}

// wakeAll wakes every ready waiter, for a message that frees the resource
// for many (a write lock released to readers). The caller holds s.mu.
func (c *channel) wakeAll() {
	for _, w := range c.waiters {
		if w.subscribed && w.nudge() {
			w.woken = true
		}
	}
}

// deliver hands an addressed message, "<tag> <note>" once Addressed is cut
// off, to the ready waiters named tag and wakes them. It does not mark them
// woken: the message is theirs alone, and nobody else is owed a wake-up if
// they leave. A message addressed to the Subscriber itself wakes one
// waiter, as an unaddressed one does. The caller holds s.mu.
func (c *channel) deliver(msg string) {
	tag, note, _ := strings.Cut(msg, " ")
	switch {
	case tag == "":
		return
	case tag == c.s.id:
		c.wakeOne()
		return
	}
	if ms, ok := strings.CutPrefix(note, Deadline); ok {
		c.deadline(tag, ms)
		return
	}
	for _, w := range c.waiters {
		if w.subscribed && w.tag == tag {
			if c.notes == nil {
				c.notes = make(map[*Waiter]string)
			}
			c.notes[w] = note // in place of any not taken; "" is none
			w.nudge()
		}
	}
}

// takeFailure returns why w failed, taken from the channel, or nil when
// it did not.
func (c *channel) takeFailure(w *Waiter) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	err := c.failures[w]
	delete(c.failures, w)
	return err
}

// deadline brings the wake-up of the ready waiters named tag forward to ms
// from now (see Deadline); a malformed ms is ignored. The caller holds s.mu.
func (c *channel) deadline(tag, ms string) {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 0 {
		return
	}
	by := alarm.Now() + time.Duration(min(n, int64(maxWait/time.Millisecond)))*time.Millisecond
	for _, w := range c.waiters {
		if w.subscribed && w.tag == tag {
			w.wakeBy(by)
		}
	}
}

// dismiss wakes every waiter for good and empties the queue, for
// Subscriber.Close. The caller holds s.mu.
func (c *channel) dismiss() {
	for _, w := range c.waiters {
		w.dismiss()
	}
	c.waiters, c.notes = nil, nil
	if c.idle != nil {
		c.idle.Stop()
	}
}

// run owns the channel's subscription. While the channel has waiters it
// keeps one Receive call running, starting a new one after a failure (with
// a backoff) or after Redis ended the subscription; once the queue is empty
// or the Subscriber closes, it unsubscribes, removes the channel from the
// Subscriber and returns. Because only run subscribes and unsubscribes the
// channel, one after the other, a waiter that arrives while the last one's
// UNSUBSCRIBE is under way gets a fresh subscription, never a dying one.
func (c *channel) run() {
	defer close(c.done)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	failures := 0
	ended := false // Redis ended the last Receive: the channel may be left subscribed
	for {
		a, ok := c.begin(ended)
		if !ok {
			return
		}
		if a == nil {
			// Redis ended the last Receive, and its waiters are gone. It
			// may have been ended by another Subscriber's UNSUBSCRIBE of
			// the channel on this connection, which overtook its SUBSCRIBE:
			// Redis then ran the SUBSCRIBE, with nobody listening. So the
			// channel is unsubscribed before it goes.
			c.unsubscribe(c.s.ctx, c.listens[:1])
			ended = false
			continue
		}
		if failures > 0 && !sleep(a.ctx, retry, backoff(failures)) {
			failures = c.end(a, a.ctx.Err(), failures)
			continue
		}
		err := c.receive(a)
		failures = c.end(a, err, failures)
		ended = err == nil
		switch {
		case err != nil:
			// A Receive that did not end with Redis's own unsubscribe
			// confirmation may leave the subscription on the server.
			c.unsubscribe(a.ctx, c.listens)
		case len(c.listens) > 1:
			// Redis ended one name's subscription: a slot migration, or
			// another Subscriber on this connection unsubscribed the
			// channel, which they share (rueidis then ends every Receive
			// of it). The inbox may be left, and only the inbox goes: it
			// is this Subscriber's alone, where unsubscribing the channel
			// would end the other's Receive in turn.
			c.unsubscribe(a.ctx, c.listens[1:])
		}
	}
}

// begin starts a subscription attempt, or, when the channel has no waiters
// left or the Subscriber is closed, removes the channel and reports false;
// but if Redis ended the last attempt (ended), it first returns no attempt,
// for run to unsubscribe the channel while it is still there to be joined.
func (c *channel) begin(ended bool) (*attempt, bool) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.closed || len(c.waiters) == 0 {
		if ended {
			return nil, true
		}
		delete(c.s.channels, c.name)
		c.s.live.Add(-1)
		return nil, false
	}
	ctx, stop := context.WithCancel(c.s.ctx)
	c.current = &attempt{ctx: ctx, stop: stop}
	return c.current, true
}

// receive runs one Receive call: it subscribes, hands every message to the
// queue, and returns when a.ctx ends (the last waiter left, or Close), when
// Redis ends the subscription (nil), or when it fails. rueidis resubscribes
// on a new connection by itself after a connection loss unless retries are
// disabled, so a loss usually shows as a second confirmation, not a
// return (see remakeLimit).
//
// rueidis calls the message handler on this goroutine, but its connection
// goroutine blocks once 16 messages wait for it, so the handler only takes
// the lock and makes a non-blocking send.
func (c *channel) receive(a *attempt) error {
	// The confirmation is the last name's: the inbox, where a Subscriber
	// has one. rueidis runs the hook of every Receive on the connection
	// that listens on a name, so the channel's would be confirmed again
	// by each other Subscriber's SUBSCRIBE of it there (taken for a lost
	// subscription made again, it woke every waiter, and at remakeLimit
	// unsubscribed, ending the others' Receive: a storm).
	last := c.listens[len(c.listens)-1]
	ctx := rueidis.WithOnSubscriptionHook(a.ctx, func(sub rueidis.PubSubSubscription) {
		if sub.Channel == last && (sub.Kind == "subscribe" || sub.Kind == "ssubscribe") {
			c.confirm(a)
		}
	})
	return c.s.rc.Receive(ctx, c.s.subscribeCmd(c.listens), func(m rueidis.PubSubMessage) {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		switch {
		case m.Message == WakeAll:
			c.wakeAll()
		case strings.HasPrefix(m.Message, Addressed):
			c.deliver(m.Message[len(Addressed):])
		default:
			c.wakeOne()
		}
	})
}

// confirm handles Redis's confirmation of a's subscription. It runs on
// rueidis' connection goroutine, so it only takes the lock and signals.
// Waiters that were ready already are all woken: the subscription was made
// again, and a message published meanwhile was lost.
// The others become ready, and their Subscribe returns. The
// remakeLimit-th confirmation after the first stops the attempt instead;
// run starts a fresh one, whose confirmation wakes them.
func (c *channel) confirm(a *attempt) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.current != a {
		return // a stopped attempt: run is about to unsubscribe it
	}
	if a.confirmed {
		if a.remade++; a.remade >= remakeLimit {
			a.stop()
			return
		}
	}
	a.confirmed = true
	for _, w := range c.waiters {
		if w.subscribed {
			w.nudge()
		} else {
			w.markReady()
		}
	}
}

// end closes attempt a, which ended with err, and returns the count of
// failed attempts in a row. An attempt that failed before Redis confirmed
// it fails the Subscribe calls waiting for it with its error: Redis refused
// the subscription or is unreachable, and the callers should hear so
// rather than wait in silence.
func (c *channel) end(a *attempt, err error, failures int) int {
	stopped := a.ctx.Err() != nil
	a.stop()
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.current == a {
		c.current = nil
	}
	switch {
	case stopped || a.confirmed:
		failures = 0
	default:
		failures++
	}
	if stopped {
		return failures
	}
	if err == nil {
		c.s.logger.Info("pubsub: Redis ended the subscription", "channel", c.name)
		return failures
	}
	c.s.logger.Warn("pubsub: subscription failed", "channel", c.name, "confirmed", a.confirmed, "err", err)
	err = fmt.Errorf("pubsub: subscribe %s: %w", c.name, err)
	c.waiters = slices.DeleteFunc(c.waiters, func(w *Waiter) bool {
		if w.subscribed {
			return false
		}
		w.fail(err)
		return true
	})
	return failures
}

// unsubscribe ends the subscription of names (the channel's listens, or
// some of them) on the server, bounded by unsubscribeTimeout even though
// ctx is done. It goes over the same connection as the SUBSCRIBE (rueidis
// sends both on the node's first pipeline), so it is processed after it.
func (c *channel) unsubscribe(ctx context.Context, names []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeTimeout)
	defer cancel()
	err := c.s.rc.Do(ctx, c.s.unsubscribeCmd(names)).Error()
	if err != nil && !errors.Is(err, rueidis.ErrClosing) {
		c.s.logger.Warn("pubsub: unsubscribe failed; it ends with the connection", "channel", c.name, "err", err)
	}
}
