package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/alarm"
	"github.com/rlock/rlock/internal/slot"
)

// ErrClosed is returned by Subscribe once the Subscriber is closed.
var ErrClosed = errors.New("pubsub: closed")

// ErrNoHashTag is returned by Subscribe, on a Redis Cluster, for a channel
// without a hash tag, which its inbox could not share (Inbox).
var ErrNoHashTag = errors.New("pubsub: on a Redis Cluster, a channel needs a hash tag, which its inbox shares")

// Subscriber keeps one subscription per channel that local waiters wait on,
// and wakes those waiters. It is safe for concurrent use.
//
// Each subscribed channel has one goroutine, which owns the channel's
// subscription: it subscribes, resubscribes after a loss, and unsubscribes
// once the channel's last waiter has left and the linger has passed.
// Close stops them all.
type Subscriber struct {
	rc      rueidis.Client
	id      string // the tag of messages addressed to this Subscriber (Addressed), and of its inboxes
	sharded bool
	tagged  bool          // channels need a hash tag: their inbox shares their slot (ErrNoHashTag)
	linger  time.Duration // how long a channel stays subscribed with no waiter
	logger  *slog.Logger
	ctx     context.Context    // parent of every subscription; done once Close begins
	cancel  context.CancelFunc // ends ctx
	stopped chan struct{}      // closed once Close has stopped every goroutine

	mu       sync.Mutex
	channels map[string]*channel // by name; an entry lives until its goroutine exits
	closed   bool
	live     atomic.Int64 // len(channels), read without mu

	// The waiters' WakeAfter wake-ups, on one timer for all (a timer per
	// waiter cost ~170 B). Set and removed under mu.
	wakeups alarm.Clock[*Waiter]
}

// New returns a Subscriber that subscribes through rc. sharded selects
// sharded pub/sub (SSUBSCRIBE, SUNSUBSCRIBE), which a Redis Cluster needs
// so that the subscription sits on the node owning the channel's slot,
// where SPUBLISH delivers; otherwise it uses SUBSCRIBE. A nil logger
// discards. id names the Subscriber in messages addressed to it ("@<id>",
// see Addressed) and its inboxes (Inbox); it holds no space, and "" is no
// name. Subscribers that share rc need distinct ids: one without an id
// takes another's SUBSCRIBE of a channel they share for its own
// subscription made again, and wakes its waiters. On a Redis Cluster, a
// Subscriber with an id subscribes only to channels with a hash tag
// (ErrNoHashTag), which rlock's all have. A channel whose last waiter
// left stays subscribed for linger (0: none), so that a waiter that comes
// back within it finds the subscription made: a channel waited on once is
// likely to be waited on again, and each SUBSCRIBE and UNSUBSCRIBE is a
// command. rc stays the caller's: Close does not close it.
func New(rc rueidis.Client, sharded bool, linger time.Duration, logger *slog.Logger, id string) *Subscriber {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscriber{
		rc:       rc,
		id:       id,
		sharded:  sharded,
		tagged:   sharded && id != "" && rc.Mode() == rueidis.ClientModeCluster,
		linger:   linger,
		logger:   logger,
		ctx:      ctx,
		cancel:   cancel,
		stopped:  make(chan struct{}),
		channels: make(map[string]*channel),
	}
	s.wakeups.Init(timeUp)
	return s
}

// Subscribe joins the queue of local waiters on channel and returns the new
// Waiter once Redis has confirmed the channel's subscription, so that a
// message published after Subscribe returns is not missed. The first waiter
// of a channel subscribes; later ones share that subscription.
//
// One case returns earlier: while rueidis makes a lost subscription again
// on a new connection, the channel still counts as subscribed, so a
// Subscribe may return before the new confirmation. That confirmation
// wakes every waiter of the channel, this one too, so a message lost
// meanwhile still leads to a re-check.
//
// ctx bounds the wait for the confirmation: when it ends first, Subscribe
// returns ctx's error, wrapped. A subscription that Redis refuses fails the
// waiters that wait for it with Redis's error. After Close, Subscribe
// returns ErrClosed; on a Cluster, for a channel without a hash tag,
// ErrNoHashTag (see New). The caller must end every Waiter it gets with
// Done.
func (s *Subscriber) Subscribe(ctx context.Context, channel string) (*Waiter, error) {
	return s.SubscribeAs(ctx, channel, "")
}

// SubscribeAs is Subscribe for a waiter named tag: beside the channel's
// wake-ups, it receives the messages addressed to tag (see Addressed),
// which wake it and no other waiter. Several waiters may share a tag; each
// of them gets the message. The empty tag is no name.
func (s *Subscriber) SubscribeAs(ctx context.Context, channel, tag string) (*Waiter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pubsub: subscribe %s: %w", channel, err)
	}
	if s.tagged {
		if _, ok := slot.HashTag(channel); !ok {
			return nil, fmt.Errorf("pubsub: subscribe %s: %w", channel, ErrNoHashTag)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	c := s.channels[channel]
	if c == nil {
		c = newChannel(s, channel)
		s.channels[channel] = c
		s.live.Add(1)
		go c.run()
	}
	w := c.join(tag)
	ready := w.ready
	s.mu.Unlock()
	if ready == nil {
		return w, nil
	}

	select {
	case <-ready:
		if err := c.takeFailure(w); err != nil {
			return nil, err
		}
		return w, nil
	case <-ctx.Done():
		w.Done(false)
		return nil, fmt.Errorf("pubsub: subscribe %s: %w", channel, ctx.Err())
	}
}

// Tagged reports whether a waiter named tag waits on channel, ready or
// still in Subscribe: one whose Subscribe failed, and so never left
// through Done, learns from it whether it was the last of its tag.
func (s *Subscriber) Tagged(channel, tag string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[channel]
	return c != nil && slices.ContainsFunc(c.waiters, func(w *Waiter) bool { return w.tag == tag })
}

// Active reports whether any channel is subscribed (or being subscribed
// or unsubscribed), without taking the Subscriber's lock: a caller can skip
// naming a channel for Waiting when none is.
func (s *Subscriber) Active() bool {
	return s.live.Load() > 0
}

// Waiting reports whether waiters of this Subscriber wait on channel, or
// did within the linger: a waiter that joins now finds its subscription
// made or under way. The name is bytes, so that a caller can build it on
// its stack: the lookup keeps nothing of it.
func (s *Subscriber) Waiting(channel []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[string(channel)]
	return c != nil && (len(c.waiters) > 0 || c.current != nil)
}

// Channels returns how many channels are subscribed, or being subscribed or
// unsubscribed, now.
func (s *Subscriber) Channels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.channels)
}

// Close wakes every waiter for good (their Wake channels are closed), fails
// every Subscribe still waiting with ErrClosed, unsubscribes every channel,
// and returns once every goroutine of the Subscriber has exited. Later calls
// wait for the first one and return nil. Close does not close the rueidis
// client. It always returns nil: a channel that cannot be unsubscribed
// (Redis unreachable) is logged, and goes when its connection does.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return nil
	}
	s.closed = true
	chans := make([]*channel, 0, len(s.channels))
	for _, c := range s.channels {
		c.dismiss()
		chans = append(chans, c)
	}
	s.mu.Unlock()

	s.cancel()
	for _, c := range chans {
		<-c.done
	}
	close(s.stopped)
	return nil
}

// subscribeCmd is the command that subscribes to channels.
func (s *Subscriber) subscribeCmd(channels []string) rueidis.Completed {
	if s.sharded {
		return s.rc.B().Ssubscribe().Channel(channels...).Build()
	}
	return s.rc.B().Subscribe().Channel(channels...).Build()
}

// unsubscribeCmd is the command that unsubscribes from channels.
func (s *Subscriber) unsubscribeCmd(channels []string) rueidis.Completed {
	if s.sharded {
		return s.rc.B().Sunsubscribe().Channel(channels...).Build()
	}
	return s.rc.B().Unsubscribe().Channel(channels...).Build()
}
