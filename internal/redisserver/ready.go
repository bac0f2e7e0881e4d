package redisserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// StartTimeout bounds how long a server may take to answer PING.
const StartTimeout = 20 * time.Second

// PollInterval is how often Poll checks again.
const PollInterval = 20 * time.Millisecond

// BaseArgs are the redis-server arguments every server started for rlock
// gets: the port, no persistence (a restarted server comes back empty), no
// protected mode, and server defaults otherwise.
func BaseArgs(port string) []string {
	return []string{"--port", port, "--save", "", "--appendonly", "no", "--protected-mode", "no"}
}

// WaitReady waits until the Redis at addr answers PING, for up to
// StartTimeout or until ctx is done.
func WaitReady(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := Poll(ctx, func(ctx context.Context) error { return Ping(ctx, addr) }); err != nil {
		return fmt.Errorf("redis at %s not ready: %w", addr, err)
	}
	return nil
}

// Poll calls check, on the caller's goroutine, every PollInterval until it
// returns nil. Once ctx is done it fails with ctx's error and the last
// reason check gave.
func Poll(ctx context.Context, check func(context.Context) error) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-timer.C:
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil {
			last = err // an error caused by ctx itself says nothing new
		}
		timer.Reset(PollInterval)
	}
}

// Ping sends one PING on a fresh connection and expects PONG.
func Ping(ctx context.Context, addr string) error {
	return Inline(ctx, addr, "PING", "+PONG")
}

// Inline sends the inline command cmd to the Redis at addr on a fresh
// connection, within a second, and expects a reply line starting with want.
// It needs no client: it serves before a client could connect, and where a
// client's goroutines would outlive the call.
func Inline(ctx context.Context, addr, cmd, want string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, want) {
		return fmt.Errorf("%s answered %q", cmd, strings.TrimSpace(line))
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
