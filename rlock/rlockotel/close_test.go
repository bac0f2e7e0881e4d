package rlockotel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/rlockotel"
)

// TestOtelCloseBalancesMetricsAndSpans: Close with holders and
// waiters of every kind leaves rlock.held and rlock.waiting at 0, counts
// every hold lost with reason closed, and ends every acquire span with the
// outcome closed and an error status.
func TestOtelCloseBalancesMetricsAndSpans(t *testing.T) {
	tel := newTelemetry(t)
	hooks, err := rlockotel.New(rlockotel.WithTracerProvider(tel.tp), rlockotel.WithMeterProvider(tel.mp))
	require.NoError(t, err)
	c, err := rlock.New(redistest.Shared(t).Client(t), rlock.WithHooks(hooks))
	require.NoError(t, err)
	ctx := t.Context()
	name := redistest.LockName(t)

	mu, fm, rw, sem := c.Mutex(name), c.FairMutex(name), c.RWMutex(name), c.Semaphore(name)
	_, err = sem.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	var holds []context.Context
	for _, take := range []func(context.Context) (context.Context, error){mu.Lock, fm.Lock, rw.Lock, sem.Acquire} {
		h, err := take(ctx)
		require.NoError(t, err)
		holds = append(holds, h)
	}
	tel.waitSum(t, "rlock.held", 4)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, take := range []func(context.Context) (context.Context, error){mu.Lock, fm.Lock, fm.Lock, rw.RLock, rw.Lock, sem.Acquire} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := take(ctx)
			errs <- err
		}()
	}
	tel.waitSum(t, "rlock.waiting", 6)
	require.NoError(t, c.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, rlock.ErrClosed)
	}
	for _, h := range holds {
		assert.ErrorIs(t, context.Cause(h), rlock.ErrClosed)
	}
	assert.Equal(t, int64(0), tel.sum(t, "rlock.held"), "held")
	assert.Equal(t, int64(0), tel.sum(t, "rlock.waiting"), "waiting")
	assert.Equal(t, int64(4), tel.sum(t, "rlock.lost", attribute.String("rlock.reason", string(rlock.EndClosed))), "lost by close")
	spans := tel.spansNamed("rlock.acquire")
	require.Len(t, spans, 10)
	closed := 0
	for _, s := range spans {
		if attr(s, "rlock.outcome").AsString() == string(rlock.OutcomeClosed) {
			closed++
			assert.Equal(t, codes.Error, s.Status.Code)
		}
	}
	assert.Equal(t, 6, closed)
}

// TestOtelDoLostEndsHeld: a Do that Redis refuses because the
// lock is gone ends the hold: rlock.held goes back to 0 and the do span
// says lost.
func TestOtelDoLostEndsHeld(t *testing.T) {
	tel := newTelemetry(t)
	c := tel.locks(t, nil)
	raw := redistest.Shared(t).Client(t)
	mu := c.Mutex(redistest.LockName(t))
	lctx, err := mu.Lock(t.Context())
	require.NoError(t, err)
	tel.waitSum(t, "rlock.held", 1)
	require.NoError(t, raw.Do(t.Context(), raw.B().Del().Key(mu.Key("")[:len(mu.Key(""))-len(":data:")]).Build()).Error())
	_, err = mu.Do(lctx, raw.B().Set().Key(mu.Key("v")).Value("1").Build())
	require.ErrorIs(t, err, rlock.ErrLockLost)
	require.Error(t, lctx.Err())
	tel.waitSum(t, "rlock.held", 0)
	spans := tel.spansNamed("rlock.do")
	require.Len(t, spans, 1)
	assert.Equal(t, string(rlock.OutcomeLost), attr(spans[0], "rlock.outcome").AsString())
	assert.Equal(t, codes.Error, spans[0].Status.Code)
	assert.ErrorIs(t, mu.Unlock(lctx), rlock.ErrNotHeld)
	_ = time.Second
}
