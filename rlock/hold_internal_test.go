package rlock

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFirstLockContext: a hold's first lock context, which makes its
// cancellation only when asked for it, answers as a
// context.WithCancelCause of its parent that the hold's end cancels with
// its cause would, whenever it is asked: before or after the end, with
// its parent done before, after, or never, and with Done or a derived
// context asked for before the end or not.
func TestFirstLockContext(t *testing.T) {
	errGone := errors.New("gone")
	type key struct{}
	for _, tc := range []struct {
		name          string
		watch         bool // Done asked for before the end
		derive        bool // a context derived before the end
		parentFirst   bool // the parent is done before the hold ends
		parentAfter   bool // the parent is done after the hold ends
		wantCauseGone bool // else the parent's cause
	}{
		{name: "ended, unwatched", wantCauseGone: true},
		{name: "ended, watched", watch: true, wantCauseGone: true},
		{name: "ended, derived", derive: true, wantCauseGone: true},
		{name: "ended, then parent", parentAfter: true, wantCauseGone: true},
		{name: "ended, watched, then parent", watch: true, parentAfter: true, wantCauseGone: true},
		{name: "parent, then ended", parentFirst: true},
		{name: "parent, watched, then ended", parentFirst: true, watch: true},
		{name: "parent, derived, then ended", parentFirst: true, derive: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
			defer cancel(nil)
			h := &hold{}
			lctx := h.bind(parent)
			require.Same(t, (*holdNode)(h), lctx, "the first lock context is the hold")
			require.NoError(t, lctx.Err())
			require.NoError(t, context.Cause(lctx))
			assert.Equal(t, "v", lctx.Value(key{}), "the parent's values")
			if tc.watch {
				select {
				case <-lctx.Done():
					t.Fatal("done before the end")
				default:
				}
			}
			var derived context.Context
			if tc.derive {
				var stop context.CancelFunc
				derived, stop = context.WithCancel(lctx)
				defer stop()
			}
			if tc.parentFirst {
				cancel(context.DeadlineExceeded)
			}
			h.life.end(errGone)
			if tc.parentAfter {
				cancel(context.DeadlineExceeded)
			}
			wantCause := error(context.DeadlineExceeded) // the parent's
			if tc.wantCauseGone {
				wantCause = errGone
			}
			assert.ErrorIs(t, lctx.Err(), context.Canceled)
			assert.ErrorIs(t, context.Cause(lctx), wantCause)
			select {
			case <-lctx.Done():
			default:
				t.Fatal("not done after the end")
			}
			if derived != nil {
				<-derived.Done()
				assert.ErrorIs(t, context.Cause(derived), wantCause, "a derived context ends as the lock context")
			}
			assert.Equal(t, "v", lctx.Value(key{}), "the parent's values, after the end too")
			assert.Same(t, (*holdNode)(h), lctx.Value(boundKey{}))
		})
	}
}

// TestLaterLockContext: a hold bound again, into a context that does not
// carry it, gets a context of its own, done with the hold's cause; so
// does a hold bound after it ended, at once.
func TestLaterLockContext(t *testing.T) {
	errGone := errors.New("gone")
	h := &hold{}
	first := h.bind(context.Background())
	later := h.bind(context.Background())
	require.NotSame(t, first, later)
	require.NoError(t, later.Err())
	h.life.end(errGone)
	assert.ErrorIs(t, context.Cause(first), errGone)
	assert.ErrorIs(t, context.Cause(later), errGone)

	ended := &hold{}
	ended.life.end(errGone)
	lctx := ended.bind(context.Background())
	assert.ErrorIs(t, lctx.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(lctx), errGone)
}
