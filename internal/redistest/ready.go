package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// pollInterval is how often poll checks again.
const pollInterval = 20 * time.Millisecond

// waitReady waits until the Redis at addr answers PING, or ctx is done.
func waitReady(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := poll(ctx, func(ctx context.Context) error { return ping(ctx, addr) }); err != nil {
		return fmt.Errorf("redis at %s not ready: %w", addr, err)
	}
	return nil
}

// poll calls check until it returns nil. Once ctx is done it fails with
// ctx's error and the last reason check gave.
func poll(ctx context.Context, check func(context.Context) error) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: %w (last: %v)", ctx.Err(), last)
		case <-timer.C:
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil {
			last = err // an error caused by ctx itself says nothing new
		}
		timer.Reset(pollInterval)
	}
}

// ping sends one PING on a fresh connection and expects PONG.
func ping(ctx context.Context, addr string) error {
	return simple(ctx, addr, "PING", "+PONG")
}

// simple sends the inline command cmd to the Redis at addr on a fresh
// connection, within a second, and expects a reply line starting with want.
// It needs no client: the harness uses it before a client could connect,
// and where a client's goroutines would outlive the call.
func simple(ctx context.Context, addr, cmd, want string) error {
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

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
