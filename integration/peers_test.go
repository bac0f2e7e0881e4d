package integration

import (
	"context"
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

// peer opens a locker of one library on its own connection to addr; the
// locker is closed when b ends.
type peer struct {
	name string
	open func(b *testing.B, addr string) locker
}

// peers are rlock and the libraries it is measured beside, each with its
// documented waiting behaviour.
var peers = []peer{
	{"rlock", openRlock},
	{"rueidislock", openRueidislock},
	{"redsync", openRedsync},
	{"redislock", openRedislock},
}

type rlockLocker struct{ c *rlock.Client }

func openRlock(b *testing.B, addr string) locker {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	require.NoError(b, err)
	c, err := rlock.New(rc)
	require.NoError(b, err)
	b.Cleanup(func() {
		require.NoError(b, c.Close())
		rc.Close()
	})
	return rlockLocker{c}
}

func (l rlockLocker) lock(ctx context.Context, name string) (func() error, error) {
	mu := l.c.Mutex(name)
	lctx, err := mu.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return mu.Unlock(lctx) }, nil
}

type rueidisLocker struct{ l rueidislock.Locker }

func openRueidislock(b *testing.B, addr string) locker {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		NoLoopTracking: true,
	})
	require.NoError(b, err)
	b.Cleanup(l.Close)
	return rueidisLocker{l}
}

func (l rueidisLocker) lock(ctx context.Context, name string) (func() error, error) {
	_, cancel, err := l.l.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	return func() error { cancel(); return nil }, nil
}

type redsyncLocker struct{ rs *redsync.Redsync }

func openRedsync(b *testing.B, addr string) locker {
	client := goredislib.NewClient(&goredislib.Options{Addr: addr})
	b.Cleanup(func() { require.NoError(b, client.Close()) })
	return redsyncLocker{redsync.New(goredis.NewPool(client))}
}

func (l redsyncLocker) lock(ctx context.Context, name string) (func() error, error) {
	// Enough tries to wait out any holder in a benchmark; the retry delay
	// is the library's default (50 to 250 ms, random).
	mu := l.rs.NewMutex(name, redsync.WithTries(1000))
	if err := mu.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() error { _, err := mu.UnlockContext(context.WithoutCancel(ctx)); return err }, nil
}

type redislockLocker struct{ c *redislock.Client }

func openRedislock(b *testing.B, addr string) locker {
	client := goredislib.NewClient(&goredislib.Options{Addr: addr})
	b.Cleanup(func() { require.NoError(b, client.Close()) })
	return redislockLocker{redislock.New(client)}
}

func (l redislockLocker) lock(ctx context.Context, name string) (func() error, error) {
	// The retry strategy of the library's README example.
	lk, err := l.c.Obtain(ctx, name, 30*time.Second, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond),
	})
	if err != nil {
		return nil, err
	}
	return func() error { return lk.Release(context.WithoutCancel(ctx)) }, nil
}
