package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
)

// processServer is redis-server run as a child process on a loopback port,
// or, launched by a launcher, in a network namespace or under a fake clock.
type processServer struct {
	port   string
	args   []string // the full argument list, reused by restart
	dir    string   // working directory: logs, and cluster or sentinel files
	launch launcher

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while killed
	exited chan struct{} // closed when cmd has exited and been reaped
}

// launcher says how redis-server is started, where the plain way will not
// do.
type launcher struct {
	host   string   // the address it listens on and is dialled at; 127.0.0.1 when empty
	prefix []string // a command that runs redis-server, such as ip netns exec
	env    []string // added to the environment, such as libfaketime's
}

// startProcess runs redis-server on a free loopback port. A port taken by
// someone else between choosing and binding it is retried.
func startProcess(ctx context.Context, l launcher, extra []string) (*processServer, error) {
	return startProcessConf(ctx, l, "", extra)
}

// startProcessConf is startProcess with a config file: unless conf is empty,
// it is written to redis.conf in the server's own directory and named first
// on the command line, the one place redis-server reads a config file from.
// Sentinel needs such a file, and rewrites it with what it learns.
func startProcessConf(ctx context.Context, l launcher, conf string, extra []string) (*processServer, error) {
	dir, err := os.MkdirTemp("", "redistest-*")
	if err != nil {
		return nil, err
	}
	var lead []string
	if conf != "" {
		path := filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
		lead = []string{path}
	}
	var last error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
		if l.host == "" {
			l.host = "127.0.0.1"
		}
		s := &processServer{port: port, dir: dir, launch: l}
		s.args = slices.Concat(lead, baseArgs(port), []string{"--bind", l.host, "--dir", dir, "--logfile", "redis.log"}, extra)
		if last = s.restart(ctx); last == nil {
			return s, nil
		}
	}
	return nil, errors.Join(last, os.RemoveAll(dir))
}

func (s *processServer) addr() string { return net.JoinHostPort(s.launch.host, s.port) }

// restart starts redis-server with the node's arguments and waits for PING.
func (s *processServer) restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redistest: restart of a running server")
	}
	argv := slices.Concat(s.launch.prefix, []string{"redis-server"}, s.args)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	if s.launch.env != nil {
		cmd.Env = append(os.Environ(), s.launch.env...)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = cmd.Wait() // reaps the child; its exit is reported by kill
	}()
	ready := make(chan error, 1)
	go func() { ready <- waitReady(ctx, s.addr()) }()
	select {
	case err := <-ready:
		if err == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w\n%s", err, s.logTail())
	case <-exited:
		<-ready
		return fmt.Errorf("redistest: redis-server on port %s exited: %v\n%s", s.port, cmd.ProcessState, s.logTail())
	}
}

// kill sends SIGKILL and returns once the process has exited, so that its
// port is free for restart.
func (s *processServer) kill(context.Context) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	return nil
}

func (s *processServer) pause(context.Context) error  { return s.signal(syscall.SIGSTOP) }
func (s *processServer) resume(context.Context) error { return s.signal(syscall.SIGCONT) }

func (s *processServer) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redistest: server is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// close kills the server and removes its directory.
func (s *processServer) close(ctx context.Context) error {
	return errors.Join(s.kill(ctx), os.RemoveAll(s.dir))
}

// logTail returns the end of the server's log, for error messages.
func (s *processServer) logTail() string {
	data, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
