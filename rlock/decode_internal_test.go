package rlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The engine's pure decoders and small rules, tested without Redis: what
// they read from a reply, a note or a hash, and what they decide from it.

func TestParseHandOver(t *testing.T) {
	for _, tc := range []struct {
		note  string
		seq   uint64
		token int64
		ok    bool
	}{
		{"12 34", 12, 34, true},
		{"0 0", 0, 0, true},
		{"18446744073709551615 -1", 18446744073709551615, -1, true},
		{"12", 0, 0, false},
		{"12 x", 0, 0, false},
		{"x 12", 0, 0, false},
		{"", 0, 0, false},
		{"-1 2", 0, 0, false},
		{"1 2 3", 0, 0, false},
	} {
		seq, token, ok := parseHandOver(tc.note)
		assert.Equal(t, tc.ok, ok, "parseHandOver(%q) ok", tc.note)
		if tc.ok {
			assert.Equal(t, tc.seq, seq, "parseHandOver(%q) seq", tc.note)
			assert.Equal(t, tc.token, token, "parseHandOver(%q) token", tc.note)
		}
	}
}

func TestNextCheck(t *testing.T) {
	lease := 30 * time.Second
	assert.Equal(t, lease, nextCheck(-time.Millisecond, lease), "a key without expiry: one lease, a wake-up ends it sooner")
	assert.Equal(t, time.Duration(0), nextCheck(-2*time.Millisecond, lease), "a key that vanished: at once")
	assert.Equal(t, time.Duration(0), nextCheck(0, lease), "no time left: at once")
	assert.Equal(t, 70*time.Millisecond, nextCheck(70*time.Millisecond, lease), "until the holder's lease runs out")
}

func TestCapPause(t *testing.T) {
	pause, ok := capPause(time.Time{}, time.Hour)
	assert.True(t, ok, "no deadline: the wait goes on")
	assert.Equal(t, time.Hour, pause, "no deadline: the pause as asked")

	pause, ok = capPause(time.Now().Add(time.Hour), time.Second)
	assert.True(t, ok)
	assert.Equal(t, time.Second, pause, "a deadline far off does not shorten the pause")

	pause, ok = capPause(time.Now().Add(time.Hour), 2*time.Hour)
	assert.True(t, ok)
	assert.LessOrEqual(t, pause, time.Hour, "the pause ends by the deadline")

	_, ok = capPause(time.Now().Add(-time.Millisecond), time.Second)
	assert.False(t, ok, "a deadline passed: the wait is over")
}

// TestHolders: a hash's fields sort into holders (a count beside #seq or
// #exp) and marks (everything else), the holders' own leases read against
// Redis's now.
func TestHolders(t *testing.T) {
	c := &Client{id: "me"}
	now := int64(1_000_000)
	holders, marks := c.holders(map[string]string{
		"me:1":          "2",
		"me:1#seq":      "17",
		"other:4:r":     "1",
		"other:4:r#exp": fmt.Sprint(now + 1500),
		"other:4:r#seq": "9",
		"other:5:r":     "1",
		"other:5:r#exp": fmt.Sprint(now - 1), // its own lease ran out: it holds nothing
		"waiters":       "1",
		"count":         "3", // no #seq or #exp beside it: a mark
	}, now)
	assert.Equal(t, []Holder{
		{Field: "me:1", Local: true, Count: 2},
		{Field: "other:4:r", Count: 1, Lease: 1500 * time.Millisecond},
	}, holders, "live holders, by field")
	assert.Equal(t, map[string]string{"waiters": "1", "count": "3"}, marks, "marks")

	holders, marks = c.holders(map[string]string{}, now)
	assert.Empty(t, holders)
	assert.Nil(t, marks, "no marks: none made")
}

// TestEndReason: every cause a hold ends with names its own reason, and a
// cause that wraps two (Close's) names the more specific one.
func TestEndReason(t *testing.T) {
	for _, tc := range []struct {
		cause   error
		watched bool
		want    EndReason
	}{
		{context.Canceled, true, EndReleased},
		{ErrLockLost, true, EndGone},
		{errDeadlinePassed, true, EndDeadline},
		{errDeadlinePassed, false, EndLeaseEnded},
		{errForceUnlocked, true, EndForceUnlocked},
		{fmt.Errorf("%w: %w", errUnlockFailed, errors.New("timeout")), true, EndUnlockFailed},
		{errQuorumLost, true, EndQuorumLost},
		{errHoldClosed, true, EndClosed},
	} {
		assert.Equal(t, tc.want, endReason(tc.cause, tc.watched), "endReason(%v, watched %v)", tc.cause, tc.watched)
	}
}

// TestCallOutcome: the caller's context decides first, then Close.
func TestCallOutcome(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()
	err := errors.New("boom")
	assert.Equal(t, OutcomeAcquired, callOutcome(live, nil))
	assert.Equal(t, OutcomeCanceled, callOutcome(canceled, err))
	assert.Equal(t, OutcomeDeadline, callOutcome(expired, err))
	assert.Equal(t, OutcomeClosed, callOutcome(live, fmt.Errorf("x: %w", ErrClosed)))
	assert.Equal(t, OutcomeError, callOutcome(live, err))
}
