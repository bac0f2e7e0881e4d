package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlock/rlock/internal/redisserver"
)

// Patience is how long Eventually waits for a state to come about: far
// longer than any state a test waits for takes on an idle machine, so that
// a loaded one (-race, two cores shared with other suites) never fails a
// test that is right; a test that is wrong fails after it, with the reason.
const Patience = 20 * time.Second

// Eventually waits for a state to come about, instead of sleeping and
// hoping it did: it calls check at once and then every 20 ms until check
// returns nil, and fails t, with what and check's last error, when Patience
// passed first. check runs on the caller's goroutine, which must be t's (so
// check may use t's helpers, such as Queued); the context it is given ends
// with the wait, and its Redis calls should use it. A check that cannot
// fail returns an error that says what it saw, for the failure message.
func Eventually(t testing.TB, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if err := redisserver.Poll(ctx, check); err != nil {
		t.Fatalf("redistest: waited %v for %s: %v", patience, what, err)
	}
}

// patience is Patience, shortened only by the package's own tests of a
// wait that fails.
var patience = Patience

// Exactly is a check for Eventually on a count: nil once got is want, else
// an error that says what was counted.
func Exactly[N int | int32 | int64](what string, got, want N) error {
	if got == want {
		return nil
	}
	return fmt.Errorf("%s: %d, want %d", what, got, want)
}
