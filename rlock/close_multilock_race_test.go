package rlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestCloseDuringMultiLockEndsItsContext: Close "ends every hold's
// context": a MultiLock whose parts are all held through the closed
// Client has lost its quorum and its context must be done, also when its
// Lock was completing while Close ran. Many MultiLocks are taken while
// Close runs; once every Lock has returned and a grace period passed,
// every context one of them returned must be done.
func TestCloseDuringMultiLockEndsItsContext(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	name := redistest.LockName(t)
	live, total := 0, 0
	var example error
	deadline := time.Now().Add(40 * time.Second)
	for round := 0; round < 30 && live == 0 && time.Now().Before(deadline); round++ {
		c, err := rlock.New(rc)
		require.NoError(t, err)
		var mu sync.Mutex
		var got []context.Context
		var wg sync.WaitGroup
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; ; k++ {
					n := fmt.Sprint(name, ":", round, ":", g, ":", k)
					ml := rlock.NewMultiLock(c.Mutex(n+"a"), c.Mutex(n+"b"))
					lctx, ok, err := ml.TryLock(context.Background(), 0, 20*time.Second)
					if err != nil {
						return
					}
					if ok {
						mu.Lock()
						got = append(got, lctx)
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Duration(30+round*7) * time.Millisecond)
		require.NoError(t, c.Close())
		wg.Wait()
		time.Sleep(500 * time.Millisecond)
		for _, lctx := range got {
			total++
			if lctx.Err() == nil {
				live++
				example = context.Cause(lctx)
			}
		}
	}
	if live > 0 {
		t.Fatalf("%d of %d MultiLock contexts (all parts on the closed Client) still live 500ms after Close returned (cause %v)", live, total, example)
	}
	t.Logf("all %d contexts done", total)
}
