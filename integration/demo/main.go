// Command demo starts its own Redis (or uses the one REDIS_ADDR names; on a
// machine without redis-server it installs it as root with apt-get, or says
// how to, see redisserver.Ensure), runs workers in several rlock Clients that contend for one lock, prints
// each hold and handoff as it happens, and ends by checking from the fencing
// tokens that no two workers ever held the lock at once. Last, it prints a summary of the metrics the locks reported
// through rlockotel (acquisitions, waits, lost holds), read from the
// OpenTelemetry SDK's manual reader, and the locks a last Client holds, as
// Client.Locks lists them.
//
//	go run ./integration/demo
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rlock/rlock/internal/redisserver"
	"github.com/rlock/rlock/rlock"
)

func main() {
	clients := flag.Int("clients", 3, "rlock Clients, each on its own Redis connection")
	workers := flag.Int("workers", 2, "workers per Client")
	rounds := flag.Int("rounds", 4, "critical sections per worker")
	flag.Parse()
	if err := run(*clients, *workers, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(clients, workers, rounds int) error {
	// Outside the run's bound: on a fresh machine Find may first install
	// redis-server, within redisserver.InstallTimeout.
	srv, err := redisserver.Find(context.Background())
	if err != nil {
		return fmt.Errorf("start redis: %w", err)
	}
	defer srv.Close()
	fmt.Printf("redis %s (%s)\n", srv.Addr(), srv.Backend())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	m, err := newMetrics()
	if err != nil {
		return err
	}
	defer m.provider.Shutdown(context.Background())
	sections, err := contend(ctx, srv.Addr(), clients, workers, rounds, rlock.WithHooks(m.hooks))
	if err != nil {
		return err
	}
	if err := checkExclusive(sections); err != nil {
		return err
	}
	fmt.Printf("ok: %d critical sections by %d workers in %d Clients; fencing tokens strictly increase and no two holds overlapped\n",
		len(sections), clients*workers, clients)
	s, err := m.summarise(ctx)
	if err != nil {
		return err
	}
	fmt.Println(s)
	if s.acquisitions != uint64(len(sections)) || s.lost != 0 {
		return fmt.Errorf("the metrics disagree with the run: %v for %d sections", s, len(sections))
	}
	return showLocks(ctx, srv.Addr())
}
