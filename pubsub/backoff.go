package pubsub

import (
	"context"
	"math/rand/v2"
	"time"
)

// Pauses between failed subscription attempts: doubling from minBackoff up
// to maxBackoff, with jitter so that many channels failing together (Redis
// went away) do not retry in lockstep.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = time.Second
)

// backoff is the pause after failures failed attempts in a row (failures > 0):
// a random duration in [d/2, d], where d doubles per failure up to maxBackoff.
func backoff(failures int) time.Duration {
	d := maxBackoff
	if shift := failures - 1; shift < 7 {
		d = min(maxBackoff, minBackoff<<shift)
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d on timer, and reports false if ctx ended first.
func sleep(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		timer.Stop()
		return false
	}
}
