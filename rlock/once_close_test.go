package rlock_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestOnceWritesRacingCloseCountRight: many AddPermits of one permit each
// are under way over a link that delays every byte, when the rlock Client
// closes, or the rueidis client under it does, at a random moment. Each
// call that returned nil added its permit, each that failed otherwise
// (ErrClosed, a closing client's error) added none, and only those whose
// error wraps ErrOutcomeUnknown may have either way: the permits Redis
// counts lie between the two, and stay there once every byte in flight has
// landed. (A closing rueidis client may end the settling call too, and
// those callers cannot be told; the rlock Client's Close leaves calls
// under way to finish, so every one of its callers is.)
func TestOnceWritesRacingCloseCountRight(t *testing.T) {
	const (
		delay = 20 * time.Millisecond
		calls = 24
	)
	direct := sharedClient(t)
	for _, closing := range []string{"rlock Client", "rueidis client"} {
		t.Run(closing, func(t *testing.T) {
			for round := range 4 {
				p := redistest.Shared(t).Proxy(t)
				rc, err := rueidis.NewClient(redistest.ClientOption(p.Addr()))
				require.NoError(t, err)
				c := newRlock(t, rc)
				t.Cleanup(rc.Close)
				name := fmt.Sprintf("%s.%d", redistest.LockName(t), round)
				_, err = direct.Semaphore(name).TrySetPermits(t.Context(), 1)
				require.NoError(t, err)
				p.Delay(delay)

				var (
					wg                   sync.WaitGroup
					mu                   sync.Mutex
					added, unknown, none int
					others               []error
				)
				for range calls {
					wg.Go(func() {
						time.Sleep(time.Duration(rand.Int64N(int64(2 * delay))))
						err := c.Semaphore(name).AddPermits(t.Context(), 1)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							added++
						case errors.Is(err, rlock.ErrOutcomeUnknown):
							unknown++
						case errors.Is(err, rlock.ErrClosed), errors.Is(err, rueidis.ErrClosing):
							none++
						default:
							others = append(others, err)
						}
					})
				}
				time.Sleep(time.Duration(rand.Int64N(int64(3 * delay))))
				if closing == "rlock Client" {
					require.NoError(t, c.Close())
				} else {
					rc.Close()
				}
				wg.Wait()
				require.Empty(t, others, "round %d: errors neither of closing nor of an unknown outcome", round)
				if closing == "rlock Client" {
					assert.Zero(t, unknown, "round %d: the link is alive: every call learns its outcome", round)
				}

				permits := func() int {
					n, err := direct.Semaphore(name).Available(t.Context())
					require.NoError(t, err)
					return n - 1
				}
				now := permits()
				assert.GreaterOrEqual(t, now, added, "round %d: permits added against calls that returned nil (%d unknown, %d not added)", round, unknown, none)
				assert.LessOrEqual(t, now, added+unknown, "round %d: permits added against calls that may have (%d returned nil, %d not added)", round, added, none)
				p.Delay(0)
				time.Sleep(5 * delay) // a copy in flight lands
				assert.Equal(t, now, permits(), "round %d: permits added after their calls returned", round)
				t.Logf("round %d: %d added, %d unknown, %d not added", round, added, unknown, none)
			}
		})
	}
}
