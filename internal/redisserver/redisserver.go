// Package redisserver finds or starts one real Redis server. It depends on
// nothing but the standard library, so a program may use it: the demo does,
// through Find. The test harness, internal/redistest, starts its child
// processes through StartProcess and waits for servers with WaitReady and
// Poll, so that a program and the tests start Redis the same way.
//
// Find takes, in this order:
//
//  1. the server REDIS_ADDR names, which it neither starts nor stops;
//  2. redis-server from PATH, run as a child process on a free loopback
//     port, with no persistence, and stopped by Close. Where it is
//     missing, Ensure installs it when it can (as root, with apt-get) and
//     otherwise fails with the one command that installs it.
//
// Docker is left to the harness, which calls Ensure only when it has no
// image to run either.
package redisserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The backends a Server reports.
const (
	BackendExternal = "external" // the server REDIS_ADDR names
	BackendProcess  = "process"  // redis-server as a child process
)

// Server is a Redis that Find found or started.
type Server struct {
	addr    string
	backend string
	proc    *Process // nil for the server REDIS_ADDR names
}

// Find returns the server REDIS_ADDR names or, when it is unset, starts
// redis-server from PATH as a child process, once Ensure has made sure
// there is one: an install is reported on stderr. The caller must Close it.
func Find(ctx context.Context) (*Server, error) {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return &Server{addr: addr, backend: BackendExternal}, nil
	}
	if err := Ensure(ctx, os.Stderr); err != nil {
		return nil, fmt.Errorf("no Redis: %w", err)
	}
	p, err := StartProcess(ctx, Launcher{}, "", nil)
	if err != nil {
		return nil, err
	}
	return &Server{addr: p.Addr(), backend: BackendProcess, proc: p}, nil
}

// HaveRedisServer reports whether redis-server is on PATH.
func HaveRedisServer() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// Version is the version line redis-server on PATH prints, for logs.
func Version() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "unknown version"
	}
	return strings.TrimSpace(string(out))
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Backend says where the server came from: BackendExternal or
// BackendProcess.
func (s *Server) Backend() string { return s.backend }

// Close stops the server if Find started it.
func (s *Server) Close() error {
	if s.proc == nil {
		return nil
	}
	if err := s.proc.Close(context.Background()); err != nil {
		return fmt.Errorf("redisserver: stop %s: %w", s.addr, err)
	}
	return nil
}
