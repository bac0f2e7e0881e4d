package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/rlock"
)

// locker is what the benchmarks drive in every library alike: take a named
// lock, waiting as the library waits, and get back how to release it.
type locker interface {
	lock(ctx context.Context, name string) (unlock func() error, err error)
}

// errLost is what an unlock function returns, wrapped, when the lock was
// gone before it: it expired, or the library found it lost.
var errLost = errors.New("lock lost before unlock")

// lostIf wraps err with errLost when it is one of the library's errors
// for a lock that was no longer held.
func lostIf(err error, notHeld error) error {
	if errors.Is(err, notHeld) {
		return fmt.Errorf("%w: %w", errLost, err)
	}
	return err
}

// peer opens a locker of one library on its own connections to addr; the
// locker is closed when b ends. lease is how long a lock lives unless
// renewed (0: the library's default); rlock and rueidislock renew it
// until unlock, the others let it run out.
//
// Each library is set up as its README shows. rlock and rueidislock run on
// rueidis, which pipelines the commands of concurrent callers on one
// connection; redsync and redislock run on go-redis, whose default pool
// holds 10 connections per GOMAXPROCS and gives each command a connection
// of its own.
type peer struct {
	name   string
	open   func(b *testing.B, addr string, lease time.Duration) locker
	renews bool // the library renews a held lock by itself
}

// peers are rlock and the libraries it is measured beside, each with its
// documented waiting behaviour.
var peers = []peer{
	{"rlock", openRlock, true},
	{"rueidislock", openRueidislock, true},
	{"redsync", openRedsync, false},
	{"redislock", openRedislock, false},
}

// newRueidis returns a rueidis client of addr with the default options, as
// rlock's README sets one up, closed when b ends.
func newRueidis(b *testing.B, addr string) rueidis.Client {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	require.NoError(b, err)
	b.Cleanup(rc.Close)
	return rc
}

type rlockLocker struct{ c *rlock.Client }

func openRlock(b *testing.B, addr string, lease time.Duration) locker {
	rc := newRueidis(b, addr)
	var opts []rlock.Option
	if lease > 0 {
		opts = append(opts, rlock.WithLeaseTime(lease))
	}
	c, err := rlock.New(rc, opts...)
	require.NoError(b, err)
	// Registered after rc's clean-up, so it runs before it.
	b.Cleanup(func() { require.NoError(b, c.Close()) })
	return rlockLocker{c}
}

func (l rlockLocker) lock(ctx context.Context, name string) (func() error, error) {
	mu := l.c.Mutex(name)
	lctx, err := mu.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return lostIf(mu.Unlock(lctx), rlock.ErrNotHeld) }, nil
}

type rueidisLocker struct{ l rueidislock.Locker }

func openRueidislock(b *testing.B, addr string, lease time.Duration) locker {
	opt := rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		// The README's settings for one Redis of version 7.0.5 or later.
		KeyMajority:    1,
		NoLoopTracking: true,
		// Not the README's: its default of 20 ms gives up on an acquire
		// that a loaded 2-core machine answers later, and WithContext then
		// waits for an invalidation that never comes (the clean-up DEL is
		// its own write, which NOLOOP keeps from it), so the run hangs.
		TryNextAfter: time.Second,
	}
	if lease > 0 {
		// Renewed as often as rlock's watchdog renews, for a like count.
		opt.KeyValidity, opt.ExtendInterval = lease, lease/3
	}
	l, err := rueidislock.NewLocker(opt)
	require.NoError(b, err)
	b.Cleanup(l.Close)
	return rueidisLocker{l}
}

func (l rueidisLocker) lock(ctx context.Context, name string) (func() error, error) {
	lctx, cancel, err := l.l.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	return func() error {
		// lctx is done before cancel, while ctx is not, when the lock
		// was lost.
		lost := ctx.Err() == nil && lctx.Err() != nil
		cancel() // returns once the key is deleted
		if lost {
			return fmt.Errorf("%w: %w", errLost, context.Cause(lctx))
		}
		return nil
	}, nil
}

// newGoRedis returns a go-redis client of addr with the default options,
// as the redsync and redislock READMEs set one up, closed when b ends.
func newGoRedis(b *testing.B, addr string) *goredislib.Client {
	client := goredislib.NewClient(&goredislib.Options{Addr: addr})
	b.Cleanup(func() { require.NoError(b, client.Close()) })
	return client
}

type redsyncLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
}

func openRedsync(b *testing.B, addr string, lease time.Duration) locker {
	// Enough tries to wait out any holder in a benchmark; the retry delay
	// is the library's default (50 to 250 ms, random).
	opts := []redsync.Option{redsync.WithTries(1000)}
	if lease > 0 {
		opts = append(opts, redsync.WithExpiry(lease))
	}
	return redsyncLocker{redsync.New(goredis.NewPool(newGoRedis(b, addr))), opts}
}

func (l redsyncLocker) lock(ctx context.Context, name string) (func() error, error) {
	mu := l.rs.NewMutex(name, l.opts...)
	if err := mu.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() error {
		_, err := mu.UnlockContext(context.WithoutCancel(ctx))
		return lostIf(err, redsync.ErrLockAlreadyExpired)
	}, nil
}

type redislockLocker struct {
	c   *redislock.Client
	ttl time.Duration
}

func openRedislock(b *testing.B, addr string, lease time.Duration) locker {
	if lease <= 0 {
		lease = 30 * time.Second
	}
	return redislockLocker{redislock.New(newGoRedis(b, addr)), lease}
}

func (l redislockLocker) lock(ctx context.Context, name string) (func() error, error) {
	// The retry strategy of the library's README example.
	lk, err := l.c.Obtain(ctx, name, l.ttl, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond),
	})
	if err != nil {
		return nil, err
	}
	return func() error { return lostIf(lk.Release(context.WithoutCancel(ctx)), redislock.ErrLockNotHeld) }, nil
}
