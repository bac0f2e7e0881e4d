package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// lockName is the one lock every worker wants.
const lockName = "demo"

// section is one critical section as a worker saw it.
type section struct {
	worker     string
	token      int64
	start, end time.Time
}

// contend runs workers in clients rlock Clients, made with opts, each on a
// connection of its own to the Redis at addr and taking the lock rounds
// times, and returns every critical section they ran.
func contend(ctx context.Context, addr string, clients, workers, rounds int, opts ...rlock.Option) ([]section, error) {
	var (
		mu       sync.Mutex
		sections []section
		errs     []error
		wg       sync.WaitGroup
	)
	for c := range clients {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			return nil, fmt.Errorf("client of %s: %w", addr, err)
		}
		defer rc.Close()
		client, err := rlock.New(rc, opts...)
		if err != nil {
			return nil, err
		}
		defer client.Close()
		for w := range workers {
			name := fmt.Sprintf("client %d / worker %d", c+1, w+1)
			wg.Go(func() {
				for range rounds {
					s, err := criticalSection(ctx, client.Mutex(lockName), name)
					mu.Lock()
					if err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", name, err))
					} else {
						sections = append(sections, s)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return sections, errors.Join(errs...)
}

// criticalSection takes the lock, works for a moment, prints the hold and
// hands the lock on.
func criticalSection(ctx context.Context, mu *rlock.Mutex, worker string) (section, error) {
	lctx, err := mu.Lock(ctx)
	if err != nil {
		return section{}, err
	}
	s := section{worker: worker, start: time.Now()}
	token, ok := mu.FencingToken(lctx)
	if !ok {
		return section{}, errors.New("no fencing token on a held lock")
	}
	s.token = token
	fmt.Printf("%s  %-22s holds the lock  token %d\n", s.start.Format("15:04:05.000"), worker, token)
	time.Sleep(time.Duration(10+rand.IntN(30)) * time.Millisecond)
	s.end = time.Now()
	if err := lctx.Err(); err != nil {
		return section{}, fmt.Errorf("lock lost while held: %w", context.Cause(lctx))
	}
	fmt.Printf("%s  %-22s hands it on\n", s.end.Format("15:04:05.000"), worker)
	return s, mu.Unlock(lctx)
}
