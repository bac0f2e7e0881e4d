package rlock

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/pubsub"
	"github.com/rlock/rlock/watchdog"
)

// Client makes locks on one Redis deployment (standalone, Sentinel or
// Cluster) through a rueidis client. It owns one watchdog goroutine that
// renews its locks and one subscriber that wakes its waiters. A Client is
// safe for concurrent use; make one per process and Redis deployment.
type Client struct {
	rc      rueidis.Client
	cfg     config
	id      string        // prefixes every owner field, <id>:<ownerToken>
	seq     atomic.Uint64 // numbers every script call of the request protocol
	publish string        // "publish", or "spublish" on a Cluster
	leaseMs string        // the watchdog's lease in ms, for script arguments
	fenceMs string        // fenceLife in ms
	dog     *watchdog.Watchdog
	subs    *pubsub.Subscriber

	turns     turnTable  // closed by Close
	deadlines deadlines  // the local deadlines of its holds
	lot       parkingLot // waiters a release may hand a Mutex to

	mu     sync.Mutex
	closed chan struct{}  // closed by Close, under mu
	shut   chan struct{}  // closed when the first Close has finished
	bg     sync.WaitGroup // background work, which Close waits for
}

// linger is how long a Client stays subscribed to a lock's channel after
// its last waiter there left. An owner that waited once is likely to wait
// again (a worker that takes a contended lock in a loop): within the
// linger its next Lock asks Redis once, as a waiter, with no SUBSCRIBE,
// refused first attempt or UNSUBSCRIBE around it.
const linger = time.Second

// New returns a Client that locks through rc. rc stays the caller's: Close
// does not close it.
func New(rc rueidis.Client, opts ...Option) (*Client, error) {
	if rc == nil {
		return nil, ErrNilClient
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	dog, err := watchdog.New(rc, watchdog.Config{Lease: cfg.lease, Logger: cfg.logger, Round: cfg.renewalHook()})
	if err != nil {
		return nil, fmt.Errorf("rlock: %w", err)
	}
	cluster := rc.Mode() == rueidis.ClientModeCluster
	id := newClientID()
	c := &Client{
		rc:      rc,
		cfg:     cfg,
		id:      id,
		publish: "publish",
		dog:     dog,
		subs:    pubsub.New(rc, cluster, linger, cfg.logger, id), // a release addresses a waiting Client by its id (lua/waiting.lua)
		closed:  make(chan struct{}),
		shut:    make(chan struct{}),
	}
	c.turns.init()
	c.deadlines.Init(expire)
	if cluster {
		c.publish = "spublish"
	}
	c.leaseMs, c.fenceMs = millis(cfg.lease), millis(c.fenceLife())
	return c, nil
}

// Mutex returns a handle on the lock called name. Handles are cheap and safe
// for concurrent use; two handles with the same name are the same lock, and
// two different names are two locks, whatever braces or bytes they hold. Only
// the empty name is invalid; it is reported by the handle's first call. To
// put several locks in one Cluster slot, see GroupedMutex.
func (c *Client) Mutex(name string) *Mutex {
	return &Mutex{newLock(c, name, mutexKind, keys.CheckName(name), keys.NewRef(c.prefix(), name))}
}

// Close stops the watchdog and the subscriber, wakes every waiting call with
// ErrClosed, and ends every hold's context (cause ErrLockLost and ErrClosed):
// nothing renews those locks any more, so they expire after their lease.
// Close does not release locks and does not close the rueidis client. It
// returns once its goroutines have exited; calling it again does nothing
// but wait for that (a signal handler's Close and a deferred one may run
// together). So it must not be called from a hook, which may run on the
// goroutine of a Close or on one that Close waits for.
func (c *Client) Close() error {
	if c == nil || c.rc == nil {
		return ErrNilClient
	}
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		<-c.shut
		return nil
	default:
	}
	close(c.closed)
	c.mu.Unlock()
	defer close(c.shut)
	holds := c.turns.close()

	// The watchdog stops first: that cuts short a renewal round in flight,
	// which finishing a hold in it would otherwise wait for.
	err := c.dog.Close()
	for _, h := range holds {
		h.finish(errHoldClosed)
	}
	c.bg.Wait()
	return errors.Join(err, c.subs.Close())
}

// goLater reports whether work may start that Close waits for (a
// goroutine, or expire on the deadlines' timer; it must call c.bg.Done
// when it ends): false once Close has begun.
func (c *Client) goLater() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return false
	default:
	}
	c.bg.Add(1)
	return true
}

// holdsOn returns the active holds this Client has on the lock at key.
func (c *Client) holdsOn(key string) []*hold {
	return c.turns.holdsOn(key)
}

// prefix is the key prefix of c's locks; "" for a nil or zero Client,
// whose handles fail with ErrNilClient anyway.
func (c *Client) prefix() string {
	if c == nil {
		return ""
	}
	return c.cfg.prefix
}
