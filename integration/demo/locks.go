package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// showLocks holds a few locks through one more Client, as a running
// deployment would (the demo lock, with the watchdog; a report lock with a
// fixed lease; a config read by two owners), and prints what Client.Locks
// sees: the operator's view, one row per lock. It fails unless it sees
// exactly those.
func showLocks(ctx context.Context, addr string) error {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return fmt.Errorf("client of %s: %w", addr, err)
	}
	defer rc.Close()
	c, err := rlock.New(rc)
	if err != nil {
		return err
	}
	defer c.Close()

	mu, report, config := c.Mutex(lockName), c.Mutex(lockName+":report"), c.RWMutex(lockName+":config")
	held, err := mu.Lock(ctx)
	if err != nil {
		return err
	}
	defer mu.Unlock(held)
	leased, err := report.LockFor(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	defer report.Unlock(leased)
	for range 2 {
		read, err := config.RLock(ctx) // a new owner each time
		if err != nil {
			return err
		}
		defer config.RUnlock(read)
	}

	var states []rlock.LockState
	for st, err := range c.Locks(ctx, lockName+"*") {
		if err != nil {
			return err
		}
		states = append(states, st)
	}
	slices.SortFunc(states, func(a, b rlock.LockState) int { return cmp.Compare(a.Name, b.Name) })
	fmt.Println("locks held at the end, as Client.Locks sees them:")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  NAME\tKIND\tHOLDERS\tTTL")
	for _, st := range states {
		fmt.Fprintf(w, "  %s\t%s\t%d\t%v\n", st.Name, st.Kind, len(st.Holders), st.Lease.Round(100*time.Millisecond))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(states) != 3 {
		return fmt.Errorf("the walk saw %d locks, not the 3 held", len(states))
	}
	return nil
}
