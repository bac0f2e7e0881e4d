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
			return fmt.Errorf("rlock: key prefix %q: %w", p, err)
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
			return fmt.Errorf("rlock: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithRetryTimeout bounds how long an acquire or release whose reply was lost
// is resent (a resent request is never applied twice), and how long Unlock
// runs when its context is already done. Default DefaultRetryTimeout.
func WithRetryTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: retry timeout %v must be positive", ErrInvalidDuration, d)
		}
		c.retryTimeout = d
		return nil
	}
}
