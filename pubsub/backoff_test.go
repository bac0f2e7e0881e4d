package pubsub

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBackoff: the pause doubles from minBackoff, never exceeds maxBackoff,
// and is never less than half the nominal pause.
func TestBackoff(t *testing.T) {
	for failures := 1; failures <= 100; failures++ {
		nominal := min(maxBackoff, minBackoff<<min(failures-1, 20))
		for range 20 {
			d := backoff(failures)
			require.GreaterOrEqual(t, d, nominal/2, "failures=%d", failures)
			require.LessOrEqual(t, d, nominal, "failures=%d", failures)
		}
	}
}
