package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The plumbing every scenario benchmark shares: lock names, one lock cycle,
// and work spread over a bounded number of goroutines.

// benchTimeout bounds each benchmark that uses benchContext. go test's
// -timeout does not cover benchmarks, so without it a library that never
// returns would hang the whole run.
const benchTimeout = 2 * time.Minute

// benchContext returns a context for b's calls, done benchTimeout from now
// or when b ends.
func benchContext(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(b.Context(), benchTimeout)
	b.Cleanup(cancel)
	return ctx
}

// benchName returns a lock name unique to the running benchmark and this
// run of it, so that no run sees another's keys on the shared Redis.
func benchName(b *testing.B) string {
	return fmt.Sprintf("bench:%s:%d", strings.ReplaceAll(b.Name(), "/", ":"), time.Now().UnixNano())
}

// cycle takes the lock name through l and releases it at once.
func cycle(ctx context.Context, l locker, name string) error {
	unlock, err := l.lock(ctx, name)
	if err != nil {
		return err
	}
	return unlock()
}

// parallel calls f for i in [0, n) on workers goroutines, passing each call
// the number of the goroutine that makes it, and returns once every call
// has. After the first error no new call starts; the errors are returned.
func parallel(n, workers int, f func(worker, i int) error) error {
	return spread(min(workers, n), func(i int) bool { return i < n }, f)
}

// runFor calls op on workers goroutines over and over until d has passed,
// passing each call the number of the goroutine that makes it, and returns
// how many calls were made once every one has returned. After the first
// error no new call starts; the errors are returned.
func runFor(d time.Duration, workers int, op func(worker int) error) (int, error) {
	end := time.Now().Add(d)
	var calls atomic.Int64
	err := spread(workers, func(int) bool { return time.Now().Before(end) }, func(worker, _ int) error {
		calls.Add(1)
		return op(worker)
	})
	return int(calls.Load()), err
}

// spread calls f on workers goroutines for i = 0, 1, 2, ... as long as
// more(i) holds, passing each call the number of the goroutine that makes
// it, and returns once every call has. After the first error no new call
// starts; the errors are returned.
func spread(workers int, more func(i int) bool, f func(worker, i int) error) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		mu     sync.Mutex
		first  error
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if !more(i) {
					return
				}
				if err := f(w, i); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return first
}

// holdMany takes every lock in names through l, at most workers at a time,
// and returns their unlock functions in the same order.
func holdMany(b *testing.B, l locker, names []string, workers int) []func() error {
	b.Helper()
	ctx := benchContext(b)
	unlocks := make([]func() error, len(names))
	err := parallel(len(names), workers, func(_, i int) error {
		unlock, err := l.lock(ctx, names[i])
		unlocks[i] = unlock
		return err
	})
	if err != nil {
		releaseAll(b, unlocks, workers)
	}
	require.NoError(b, err, "take %d locks", len(names))
	return unlocks
}

// releaseAll calls every non-nil unlock function, at most workers at a
// time, and returns how many found their lock lost (errLost). Other errors
// fail b.
func releaseAll(b *testing.B, unlocks []func() error, workers int) (lost int) {
	b.Helper()
	var n atomic.Int64
	require.NoError(b, parallel(len(unlocks), workers, func(_, i int) error {
		if unlocks[i] == nil {
			return nil
		}
		err := unlocks[i]()
		if errors.Is(err, errLost) {
			n.Add(1)
			return nil
		}
		return err
	}), "release %d locks", len(unlocks))
	return int(n.Load())
}

// lockNames returns n distinct lock names under base.
func lockNames(base string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s:%d", base, i)
	}
	return names
}
