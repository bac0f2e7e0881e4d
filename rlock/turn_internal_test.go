package rlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTurnIsExclusive: goroutines of one owner on one lock have its turn
// one at a time, a goroutine that gives up waiting (its context done, or
// the Client closed) neither has it nor keeps others from it, and the
// table forgets the turn once nobody uses it.
func TestTurnIsExclusive(t *testing.T) {
	c := &Client{closed: make(chan struct{})}
	c.turns.init()
	id := holdID{key: "k", field: "f"}
	var (
		wg     sync.WaitGroup
		inside int
		mu     sync.Mutex
		shared int // written in the turn only: the race detector checks it is
	)
	for i := range 64 {
		wg.Go(func() {
			for j := range 200 {
				ctx := context.Background()
				if (i+j)%3 == 0 { // some give up while they wait
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(j%5)*time.Microsecond)
					defer cancel()
				}
				tn, err := c.take(ctx, id)
				if err != nil {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					continue
				}
				mu.Lock()
				inside++
				require.Equal(t, 1, inside, "one goroutine has the turn")
				mu.Unlock()
				shared++
				mu.Lock()
				inside--
				mu.Unlock()
				c.give(tn)
			}
		})
	}
	wg.Wait()
	require.Zero(t, c.turns.len(), "no turn is left once nobody uses it")

	// A goroutine waiting for a turn when the Client closes gives up.
	tn, err := c.take(context.Background(), id)
	require.NoError(t, err)
	waited := make(chan error)
	go func() {
		_, err := c.take(context.Background(), id)
		waited <- err
	}()
	close(c.closed)
	require.ErrorIs(t, <-waited, ErrClosed)
	c.give(tn)
	require.Zero(t, c.turns.len(), "no turn is left once nobody uses it")
}

// TestTurnsWhoseHashesClash: turns whose ids hash the same are each found
// by their own id, and each is dropped alone, whichever goes first.
func TestTurnsWhoseHashesClash(t *testing.T) {
	for _, firstGoesFirst := range []bool{true, false} {
		var tt turnTable
		tt.init()
		sh := &tt.shards[0]
		a, b := holdID{key: "k", field: "a"}, holdID{key: "k", field: "b"}
		const hash = 7 // as if a and b hashed the same
		ta, tb := sh.turnOf(a, hash), sh.turnOf(b, hash)
		require.NotSame(t, ta, tb, "each id has a turn of its own")
		require.Same(t, ta, sh.turnOf(a, hash))
		require.Same(t, tb, sh.turnOf(b, hash))
		require.Equal(t, 2, tt.len())

		first, second, secondID := ta, tb, b
		if !firstGoesFirst {
			first, second, secondID = tb, ta, a
		}
		sh.drop(first, hash)
		require.Equal(t, 1, tt.len(), "the other turn stays")
		require.Same(t, second, sh.turnOf(secondID, hash), "and is still found")
		sh.drop(second, hash)
		require.Zero(t, tt.len(), "no turn is left")
	}
}
