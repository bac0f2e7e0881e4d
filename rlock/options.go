package rlock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rlock/rlock/internal/keys"
)

const (
	// DefaultLeaseTime is the lease the watchdog keeps setting on a lock taken
	// without one, renewing every third of it; Redisson's
	// lockWatchdogTimeout.
	DefaultLeaseTime = 30 * time.Second

	// DefaultKeyPrefix starts every Redis key and channel rlock uses.
	DefaultKeyPrefix = "rlock:"

	// DefaultRetryTimeout bounds how long one acquire or release keeps
	// resending a request whose reply was lost, and how long Unlock may take
	// when the caller's context is already done.
	DefaultRetryTimeout = 5 * time.Second

	// MinLease is the shortest lease accepted: a lease must stay positive
	// after the clock-drift allowance is taken off.
	MinLease = 10 * time.Millisecond
)

// Option configures a Client; pass options to New.
type Option func(*config) error

// config is what the options set.
type config struct {
	lease        time.Duration
	prefix       string
	logger       *slog.Logger
	retryTimeout time.Duration

	replicas       int           // WithReplicaAck: replicas that must acknowledge an acquire
	replicaTimeout time.Duration // how long WAIT waits for them

	hooks Hooks // WithHooks; nil: nothing is reported
}

func defaultConfig() config {
	return config{
		lease:        DefaultLeaseTime,
		prefix:       DefaultKeyPrefix,
		logger:       slog.New(slog.DiscardHandler),
		retryTimeout: DefaultRetryTimeout,
	}
}

// WithLeaseTime sets the lease of locks taken without one (Lock, and TryLock
// with lease <= 0); the watchdog renews them every d/3 until Unlock.
// Default DefaultLeaseTime; at least MinLease.
func WithLeaseTime(d time.Duration) Option {
	return func(c *config) error {
		if d < MinLease {
			return fmt.Errorf("%w: lease time %v is below %v", ErrInvalidDuration, d, MinLease)
		}
		c.lease = d
		return nil
	}
}

// WithKeyPrefix sets the prefix of every key and channel. Default
// DefaultKeyPrefix. It may be empty but must not contain braces: a lock's
// Cluster hash tag comes from its name.
func WithKeyPrefix(p string) Option {
	return func(c *config) error {
		if err := keys.CheckPrefix(p); err != nil {
			return fmt.Errorf("%w: key prefix %q: %v", ErrInvalidArgument, p, err)
		}
		c.prefix = p
		return nil
	}
}

// WithLogger sets where renewal failures and lost locks are reported. The
// default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidArgument)
		}
		c.logger = l
		return nil
	}
}

// WithRetryTimeout bounds each acquire's and release's exchange with Redis:
// the first send and, when a reply was lost, the resends (each supersedes
// the lost call, so none applies twice or late); also how long settling a
// given-up acquire may take, and how long Unlock runs when its context is
// already done. An exchange that runs out fails with an error that matches
// context.DeadlineExceeded, so a timeout shorter than a round trip fails
// every call. Default DefaultRetryTimeout.
func WithRetryTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: retry timeout %v must be positive", ErrInvalidDuration, d)
		}
		c.retryTimeout = d
		return nil
	}
}

// WithReplicaAck makes every acquire wait until at least n replicas have
// acknowledged it (Redis WAIT n timeout, sent down the connection that ran
// the acquire), as Redisson's checkLockSyncedSlaves does. A level that fewer
// replicas acknowledged within timeout is given back at once and the call
// fails with ErrNotReplicated, so that no lock is held that a failover to a
// replica would forget. The default, n 0, does not wait.
func WithReplicaAck(n int, timeout time.Duration) Option {
	return func(c *config) error {
		switch {
		case n < 0:
			return fmt.Errorf("%w: replica count %d is negative", ErrInvalidArgument, n)
		case n > 0 && timeout <= 0:
			return fmt.Errorf("%w: replica ack timeout %v must be positive", ErrInvalidDuration, timeout)
		}
		c.replicas, c.replicaTimeout = n, timeout
		return nil
	}
}
