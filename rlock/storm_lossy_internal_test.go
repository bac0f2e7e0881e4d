package rlock

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/lua"
)

const (
	lossyP     = 0.3
	lossyLease = time.Second
)

// lossyHook loses some replies of the Mutex scripts on one lock: some
// after the call ran, some before it was sent.
type lossyHook struct {
	rueidis.Client
	hash string
	p    float64
}

func (h *lossyHook) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands()
	if len(args) > 3 && (args[0] == "EVALSHA" || args[0] == "EVAL") && args[3] == h.hash {
		switch r := rand.Float64(); {
		case r < h.p/2:
			return lost()
		case r < h.p:
			res := h.Client.Do(ctx, cmd)
			if res.Error() == nil {
				return lost()
			}
			return res
		}
	}
	return h.Client.Do(ctx, cmd)
}

// syncBuf is a bytes.Buffer safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLossyStorm: two Clients whose script replies on one Mutex are
// lost now and then; owners shared by goroutines, fresh owners, Locks
// cancelled at random, TryLocks. Never two owners inside at once, and at
// the end nothing is held in Redis once every hold is let go.
func TestLossyStorm(t *testing.T) {
	node := redistest.Shared(t)
	raw := node.Client(t)
	name := redistest.LockName(t)
	ks := keys.New(DefaultKeyPrefix, name)
	for _, sc := range []*lua.Script{mutexKind.acquire, mutexKind.release} {
		require.NoError(t, raw.Do(t.Context(), raw.B().ScriptLoad().Script(sc.Text()).Build()).Error())
	}
	var clients []*Client
	var logBuf syncBuf
	for range 2 {
		c, err := New(&lossyHook{Client: node.Client(t), hash: ks.Hash, p: lossyP}, WithRetryTimeout(100*time.Millisecond), WithLeaseTime(lossyLease), WithLogger(slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	var (
		mu     sync.Mutex
		inside = map[any]int{}
		bad    []string
		stats  = map[*owner]map[string]int{}
	)
	enter := func(who any, lctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		for o, n := range inside {
			if o != who && n > 0 && lctx.Err() == nil {
				bad = append(bad, fmt.Sprintf("two owners inside: %p and %p", o, who))
			}
		}
		inside[who]++
	}
	leave := func(who any) {
		mu.Lock()
		defer mu.Unlock()
		inside[who]--
	}
	stop, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	run := func(m *Mutex, owner context.Context) {
		for stop.Err() == nil {
			base := owner
			if base == nil {
				base = context.Background()
			}
			var lctx context.Context
			var ok bool
			var err error
			switch rand.IntN(3) {
			case 0:
				ctx, c := context.WithTimeout(base, 3*time.Second)
				lctx, err = m.Lock(ctx)
				c()
				ok = err == nil
			case 1:
				lctx, ok, _ = m.TryLock(base, time.Duration(rand.IntN(15))*time.Millisecond, 0) // an error (a lost reply) is a refusal here
			case 2:
				ctx, c := context.WithCancel(base)
				time.AfterFunc(time.Duration(rand.IntN(5000))*time.Microsecond, c)
				lctx, err = m.Lock(ctx)
				ok = err == nil
				if ok {
					lctx = context.WithoutCancel(lctx)
				}
			}
			if !ok {
				continue
			}
			o, _ := ownerFrom(lctx)
			enter(o, lctx)
			time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			leave(o)
			err = m.Unlock(lctx) // may fail: a lost reply
			mu.Lock()
			st := stats[o]
			if st == nil {
				st = map[string]int{}
				stats[o] = st
			}
			st["locks"]++
			if err != nil {
				st[err.Error()]++
			}
			mu.Unlock()
		}
	}
	for _, c := range clients {
		m := c.Mutex(name)
		for range 2 {
			octx, _ := withOwner(context.Background())
			for range 3 {
				wg.Go(func() { run(m, octx) })
			}
		}
		for range 4 {
			wg.Go(func() { run(m, nil) })
		}
	}
	wg.Wait()
	mu.Lock()
	assert.Empty(t, bad)
	mu.Unlock()
	// Every hold was let go (or its Unlock failed, which ends it): nothing
	// may renew the lock, so it is free within its lease.
	deadline := time.Now().Add(3 * lossyLease)
	for {
		n, err := raw.Do(t.Context(), raw.B().Exists().Key(ks.Hash).Build()).AsInt64()
		require.NoError(t, err)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			fields, _ := raw.Do(t.Context(), raw.B().Hgetall().Key(ks.Hash).Build()).AsStrMap()
			pttl, _ := raw.Do(t.Context(), raw.B().Pttl().Key(ks.Hash).Build()).AsInt64()
			assert.Failf(t, "the lock is kept with every Lock returned and every Unlock called",
				"%v later still held: %v, %d ms left", 3*lossyLease, fields, pttl)
			t.Log(logBuf.String())
			mu.Lock()
			for o, st := range stats {
				if len(st) > 1 {
					t.Logf("owner %x: %v", o.n, st)
				}
			}
			mu.Unlock()
			for _, c := range clients {
				for i := range c.turns.shards {
					sh := &c.turns.shards[i]
					sh.mu.Lock()
					for _, tn := range sh.all() {
						t.Logf("turn %s: count %d unsettled %d hold %v active %v", tn.id.field, tn.count, tn.unsettled, tn.hold != nil, tn.hold != nil && tn.hold.active())
					}
					sh.mu.Unlock()
				}
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}
