package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// hashAll returns HGETALL of key.
func hashAll(t *testing.T, rc rueidis.Client, key string) map[string]string {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().Hgetall().Key(key).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

// fixFields returns the F#fix fields of m.
func fixFields(m map[string]string) []string {
	var out []string
	for f := range m {
		if strings.HasSuffix(f, "#fix") {
			out = append(out, f)
		}
	}
	return out
}

// TestHeirRenewedThoughOwnerWaitsFixed: two goroutines of one owner wait
// on a lock: B with Lock (the watchdog's lease) parked first, then A with
// LockFor (a fixed lease). A FairMutex's queue has one entry for both,
// whose #lease A's ask wrote last. The holder, of the same Client, unlocks
// and names B (parked longest) as heir. The hand-over marks the hold from
// the heir's own lease (ARGV[11]), not from the entry's: were B's hold
// marked fixed, renew.lua would refuse every renewal, and B would be told
// its lock is lost while Redis still holds it for it.
func TestHeirRenewedThoughOwnerWaitsFixed(t *testing.T) {
	type exclusive interface {
		Lock(context.Context) (context.Context, error)
		LockFor(context.Context, time.Duration) (context.Context, error)
		Unlock(context.Context) error
	}
	type opened struct {
		m      exclusive
		hash   string
		parked func() int
	}
	const lease = 600 * time.Millisecond
	for _, kind := range []struct {
		name string
		open func(c *rlock.Client, name string) opened
	}{
		{"Mutex", func(c *rlock.Client, n string) opened {
			m := c.Mutex(n)
			return opened{m, lockKeys(n).Hash, func() int { return rlock.Parked(m) }}
		}},
		{"FairMutex", func(c *rlock.Client, n string) opened {
			m := c.FairMutex(n)
			return opened{m, fairKeys(n).Hash, func() int { return rlock.Parked(m) }}
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			s := redistest.Setup{Node: redistest.Shared(t)}
			name := redistest.LockName(t)
			admin := s.Client(t)
			c := newRlock(t, s.Client(t), rlock.WithLeaseTime(lease))
			o := kind.open(c, name)
			parked := func(n int) {
				redistest.Eventually(t, fmt.Sprintf("%d waiters parked", n), func(context.Context) error {
					return redistest.Exactly("parked", o.parked(), n)
				})
			}
			held, err := o.m.Lock(t.Context())
			require.NoError(t, err)

			owner := sharedOwner(t, c, name)
			gotB, gotA := make(chan lockResult2, 1), make(chan lockResult2, 1)
			go func() {
				lctx, err := o.m.Lock(owner)
				gotB <- lockResult2{lctx, err}
			}()
			parked(1)
			go func() {
				lctx, err := o.m.LockFor(owner, 20*time.Second)
				gotA <- lockResult2{lctx, err}
			}()
			parked(2)
			require.NoError(t, o.m.Unlock(held))
			rB := receive(t, gotB, "B, the heir")
			require.NoError(t, rB.err)
			rA := receive(t, gotA, "A, a re-entry of B's hold")
			require.NoError(t, rA.err)

			time.Sleep(3 * lease) // the thing under test: renewals keep B's hold past its lease
			h := hashAll(t, admin, o.hash)
			assert.NoError(t, context.Cause(rB.ctx), "B's hold (Lock: the watchdog renews it) is not lost")
			assert.Empty(t, fixFields(h), "a hold the watchdog renews carries no F#fix: %v", h)
			assert.NoError(t, o.m.Unlock(rA.ctx))
			assert.NoError(t, o.m.Unlock(rB.ctx))
		})
	}
}

// TestPermitReleaseTakesFixedMark: a travelling permit always has a fixed
// lease, so semaphore_acquire.lua marks it permit:<id>#fix, and its
// release must delete the mark with the permit: while another holder
// keeps the hash alive a mark left behind would pile up (every semaphore
// script reads the whole hash), and Inspect would show it as a mark.
func TestPermitReleaseTakesFixedMark(t *testing.T) {
	name := redistest.LockName(t)
	admin := redistest.Shared(t).Client(t)
	c := sharedClient(t)
	sem := c.Semaphore(name)
	_, err := sem.TrySetPermits(t.Context(), 3)
	require.NoError(t, err)
	held, err := sem.Acquire(t.Context()) // keeps the hash alive
	require.NoError(t, err)
	defer func() { assert.NoError(t, sem.Release(held)) }()

	const rounds = 20
	for range rounds {
		id, err := sem.AcquirePermit(t.Context(), 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, sem.ReleasePermit(t.Context(), id))
	}
	h := hashAll(t, admin, semaphoreKeys(name).Hash)
	t.Logf("hash after %d AcquirePermit/ReleasePermit: %d fields, %d of them F#fix", rounds, len(h), len(fixFields(h)))
	assert.Empty(t, fixFields(h), "no F#fix of a permit given back stays behind")
	st, err := sem.Inspect(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Marks, "Inspect shows no mark of a permit given back")
}

// TestMixedLeasesStayRenewed: one owner mixes fixed and renewed
// takes of one lock; once the watchdog renews the hold (a Lock or Acquire
// among them), no renewal may be refused: the hold must outlive several
// watchdog leases, and Redis must hold no F#fix for it.
func TestMixedLeasesStayRenewed(t *testing.T) {
	const lease = 300 * time.Millisecond
	admin := redistest.Shared(t).Client(t)
	cases := []struct {
		name string
		run  func(t *testing.T, c *rlock.Client, name string) (ctxs []context.Context, key string, give func())
	}{
		{"Mutex LockFor then Lock", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			m := c.Mutex(name)
			a, err := m.LockFor(t.Context(), 20*time.Second)
			require.NoError(t, err)
			b, err := m.Lock(a)
			require.NoError(t, err)
			require.NoError(t, m.Unlock(b)) // back to the fixed level: the hold stays renewed
			return []context.Context{a}, lockKeys(name).Hash, func() { _ = m.Unlock(a) }
		}},
		{"Mutex Lock then LockFor", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			m := c.Mutex(name)
			a, err := m.Lock(t.Context())
			require.NoError(t, err)
			b, err := m.LockFor(a, 200*time.Millisecond)
			require.NoError(t, err)
			return []context.Context{a, b}, lockKeys(name).Hash, func() { _ = m.Unlock(b); _ = m.Unlock(a) }
		}},
		{"FairMutex LockFor then Lock", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			m := c.FairMutex(name)
			a, err := m.LockFor(t.Context(), 20*time.Second)
			require.NoError(t, err)
			b, err := m.Lock(a)
			require.NoError(t, err)
			return []context.Context{a, b}, fairKeys(name).Hash, func() { _ = m.Unlock(b); _ = m.Unlock(a) }
		}},
		{"RWMutex write LockFor then RLock (downgrade) then Unlock", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			rw := c.RWMutex(name)
			w, err := rw.LockFor(t.Context(), 20*time.Second)
			require.NoError(t, err)
			r, err := rw.RLock(w)
			require.NoError(t, err)
			require.NoError(t, rw.Unlock(w))
			return []context.Context{r}, rwKeys(name).Hash, func() { _ = rw.RUnlock(r) }
		}},
		{"RWMutex RLockFor then RLock", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			rw := c.RWMutex(name)
			a, err := rw.RLockFor(t.Context(), 20*time.Second)
			require.NoError(t, err)
			b, err := rw.RLock(a)
			require.NoError(t, err)
			require.NoError(t, rw.RUnlock(b))
			return []context.Context{a}, rwKeys(name).Hash, func() { _ = rw.RUnlock(a) }
		}},
		{"Semaphore AcquireFor then Acquire then Release one", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			s := c.Semaphore(name)
			_, err := s.TrySetPermits(t.Context(), 3)
			require.NoError(t, err)
			a, err := s.AcquireFor(t.Context(), 20*time.Second)
			require.NoError(t, err)
			b, err := s.Acquire(a)
			require.NoError(t, err)
			require.NoError(t, s.Release(b))
			return []context.Context{a}, semaphoreKeys(name).Hash, func() { _ = s.Release(a) }
		}},
		{"MultiLock LockFor then Lock", func(t *testing.T, c *rlock.Client, name string) ([]context.Context, string, func()) {
			ml := rlock.NewMultiLock(c.Mutex(name+".a"), c.Mutex(name+".b"), c.Mutex(name))
			a, err := ml.LockFor(t.Context(), 20*time.Second)
			require.NoError(t, err)
			b, err := ml.Lock(a)
			require.NoError(t, err)
			require.NoError(t, ml.Unlock(b))
			return []context.Context{a}, lockKeys(name).Hash, func() { _ = ml.Unlock(a) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := redistest.LockName(t)
			c := sharedClient(t, rlock.WithLeaseTime(lease))
			ctxs, key, give := tc.run(t, c, name)
			defer give()
			time.Sleep(5 * lease)
			for i, ctx := range ctxs {
				assert.NoError(t, context.Cause(ctx), "lock context %d", i)
			}
			h := hashAll(t, admin, key)
			t.Logf("hash: %v", h)
		})
	}
}
