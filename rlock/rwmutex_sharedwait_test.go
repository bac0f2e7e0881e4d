package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/hooktest"
)

// waitMark waits until a field of hash ends with suffix: a waiting mark
// (":r#wait", ":w#wait") that a refused waiter left.
func waitMark(t *testing.T, rc rueidis.Client, hash, suffix string) {
	t.Helper()
	redistest.Eventually(t, "a field *"+suffix+" in "+hash, func(ctx context.Context) error {
		m, err := rc.Do(ctx, rc.B().Hgetall().Key(hash).Build()).AsStrMap()
		if err != nil {
			return err
		}
		for f := range m {
			if strings.HasSuffix(f, suffix) {
				return nil
			}
		}
		return fmt.Errorf("none in %v", m)
	})
}

// sharedWait is two calls of one owner of an RWMutex's Client (whose hooks
// rec records) that wait for it: first, then second once first's refusal
// left its mark (suffix) in the lock's hash. It returns once second was
// refused too (its call began to wait).
type sharedWait struct {
	cancelFirst   context.CancelFunc
	first, second <-chan error
}

func startSharedWait(t *testing.T, rec *hooktest.Recorder, raw rueidis.Client, name, mark string, owner context.Context,
	first, second func(ctx context.Context) error) sharedWait {
	t.Helper()
	run := func(ctx context.Context, do func(ctx context.Context) error) <-chan error {
		got := make(chan error, 1)
		go func() { got <- do(ctx) }()
		return got
	}
	ctx, cancel := context.WithCancel(owner)
	t.Cleanup(cancel)
	waits := rec.Snapshot().Waits
	w := sharedWait{cancelFirst: cancel, first: run(ctx, first)}
	waitMark(t, raw, rwKeys(name).Hash, mark)
	w.second = run(owner, second)
	rec.WaitFor(t, "both calls wait", func(e hooktest.Events) bool { return e.Waits >= waits+2 })
	return w
}

// order records what took an RWMutex, in turn.
type order struct {
	mu   sync.Mutex
	took []string
}

func (o *order) add(what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.took = append(o.took, what)
}

func (o *order) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.took...)
}

// TestRWSharedOwnerReaderGivingUpKeepsTheOthersTurn: two calls of one
// owner wait to read behind a writer, and a writer of another Client waits
// behind them. When the first read gives up (cancelled, or its TryRLock's
// wait ran out), the other still reads before the later writer writes, as
// a reader that waited before a writer does. (The one that gave up took
// back the mark the owner's calls share: the other lost its admission and
// read after the later writer.)
func TestRWSharedOwnerReaderGivingUpKeepsTheOthersTurn(t *testing.T) {
	for _, how := range []string{"cancelled", "wait ran out"} {
		t.Run(how, func(t *testing.T) {
			s := redistest.Setup{Node: redistest.Shared(t)}
			name := redistest.LockName(t)
			raw, rec := s.Client(t), &hooktest.Recorder{}
			a, c := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
			b := newRlock(t, s.Client(t), rlock.WithHooks(rec))
			w1, err := a.RWMutex(name).Lock(t.Context())
			require.NoError(t, err)

			var took order
			rw := b.RWMutex(name)
			firstWait := time.Minute
			if how == "wait ran out" {
				firstWait = time.Second
			}
			w := startSharedWait(t, rec, raw, name, ":r#wait", sharedOwner(t, b, name),
				func(ctx context.Context) error {
					_, ok, err := rw.TryRLock(ctx, firstWait, 0)
					if err == nil && ok {
						return errors.New("the first read took the lock")
					}
					return err
				},
				func(ctx context.Context) error {
					lctx, err := rw.RLock(ctx)
					if err != nil {
						return err
					}
					took.add("read")
					return rw.RUnlock(lctx)
				})
			writer := make(chan error, 1)
			go func() {
				wctx, err := c.RWMutex(name).Lock(t.Context())
				if err == nil {
					took.add("write")
					err = c.RWMutex(name).Unlock(wctx)
				}
				writer <- err
			}()
			waitMark(t, raw, rwKeys(name).Hash, ":w#wait")
			if how == "cancelled" {
				w.cancelFirst()
				require.ErrorIs(t, receive(t, w.first, "the first read"), context.Canceled)
			} else {
				require.NoError(t, receive(t, w.first, "the first read"), "its wait ran out")
			}

			require.NoError(t, a.RWMutex(name).Unlock(w1))
			require.NoError(t, receive(t, w.second, "the second read"))
			require.NoError(t, receive(t, writer, "the later writer"))
			assert.Equal(t, []string{"read", "write"}, took.get(), "the read that waited before the writer reads first")
		})
	}
}

// TestRWSharedOwnerWriterGivingUpKeepsReadersOut: two calls of one owner
// wait to write behind a reader. When the first gives up, the other still
// waits, and a new reader is refused: once a writer waits, new readers
// wait behind it. (The one that gave up took back the mark the two share,
// and a new reader got in until the other's next refusal marked again.)
func TestRWSharedOwnerWriterGivingUpKeepsReadersOut(t *testing.T) {
	s := redistest.Setup{Node: redistest.Shared(t)}
	raw, rec := s.Client(t), &hooktest.Recorder{}
	a, c := newRlock(t, s.Client(t)), newRlock(t, s.Client(t))
	b := newRlock(t, s.Client(t), rlock.WithHooks(rec))
	for round := range 5 {
		name := fmt.Sprintf("%s.%d", redistest.LockName(t), round)
		r0, err := a.RWMutex(name).RLock(t.Context())
		require.NoError(t, err)
		rw := b.RWMutex(name)
		lock := func(ctx context.Context) error {
			lctx, err := rw.Lock(ctx)
			if err != nil {
				return err
			}
			return rw.Unlock(lctx)
		}
		w := startSharedWait(t, rec, raw, name, ":w#wait", sharedOwner(t, b, name), lock, lock)
		w.cancelFirst()
		require.ErrorIs(t, receive(t, w.first, "the first write"), context.Canceled)
		for range 10 {
			rctx, ok, err := c.RWMutex(name).TryRLock(t.Context(), 0, 0)
			require.NoError(t, err)
			if ok {
				require.NoError(t, c.RWMutex(name).RUnlock(rctx))
			}
			require.False(t, ok, "round %d: a new reader got in while a writer waits", round)
		}
		require.NoError(t, a.RWMutex(name).RUnlock(r0))
		require.NoError(t, receive(t, w.second, "the second write"))
	}
}
