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
//     port, with no persistence, and stopped by Close.
//
// Docker is left to the harness: a program that has neither gets an error
// that says how to get one.
package redisserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
// redis-server from PATH as a child process. The caller must Close it.
func Find(ctx context.Context) (*Server, error) {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return &Server{addr: addr, backend: BackendExternal}, nil
	}
	if !HaveRedisServer() {
		return nil, errors.New("redisserver: no Redis: set REDIS_ADDR=host:port, or install redis-server")
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
