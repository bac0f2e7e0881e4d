package redisserver

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

// Process is redis-server run as a child process on a loopback port, or,
// as a Launcher says, in a network namespace or under a fake clock. It can
// be killed, restarted empty on the same address, paused and resumed.
type Process struct {
	port   string
	args   []string // the full argument list, reused by Restart
	dir    string   // working directory: logs, and cluster or sentinel files
	launch Launcher

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while killed
	exited chan struct{} // closed when cmd has exited and been reaped
}

// Launcher says how redis-server is started, where the plain way will not
// do. Its zero value starts it plainly, on 127.0.0.1.
type Launcher struct {
	Host   string   // the address it listens on and is dialled at; 127.0.0.1 when empty
	Prefix []string // a command that runs redis-server, such as ip netns exec
	Env    []string // added to the environment, such as a fake clock's
}

// StartProcess runs redis-server, as l says, on a free port with extra
// arguments after BaseArgs, and returns once it answers PING. A port taken
// by someone else between choosing and binding it is retried. Unless conf
// is empty, it is written to redis.conf in the server's own directory and
// named first on the command line, the one place redis-server reads a
// config file from: Sentinel needs such a file, and rewrites it with what
// it learns. The caller must Close the server.
func StartProcess(ctx context.Context, l Launcher, conf string, extra []string) (*Process, error) {
	dir, err := os.MkdirTemp("", "redisserver-*")
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
		port, err := FreePort()
		if err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
		if l.Host == "" {
			l.Host = "127.0.0.1"
		}
		s := &Process{port: port, dir: dir, launch: l}
		s.args = slices.Concat(lead, BaseArgs(port), []string{"--bind", l.Host, "--dir", dir, "--logfile", "redis.log"}, extra)
		if last = s.Restart(ctx); last == nil {
			return s, nil
		}
	}
	return nil, errors.Join(last, os.RemoveAll(dir))
}

// Addr is the server's host:port.
func (s *Process) Addr() string { return net.JoinHostPort(s.launch.Host, s.port) }

// Restart starts a killed server again with the same arguments, empty, on
// the same address, and waits for PING.
func (s *Process) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redisserver: restart of a running server")
	}
	argv := slices.Concat(s.launch.Prefix, []string{"redis-server"}, s.args)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	if s.launch.Env != nil {
		cmd.Env = append(os.Environ(), s.launch.Env...)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go reap(cmd, exited)
	ready := make(chan error, 1)
	go s.waitReady(ctx, ready)
	select {
	case err := <-ready:
		if err == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w\n%s", err, s.LogTail())
	case <-exited:
		<-ready
		return fmt.Errorf("redisserver: redis-server on port %s exited: %v\n%s", s.port, cmd.ProcessState, s.LogTail())
	}
}

// Kill sends SIGKILL and returns once the process has exited, so that its
// port is free for Restart. Its data is lost.
func (s *Process) Kill(context.Context) error {
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

// Pause freezes the server (SIGSTOP): connections stay open and nothing is
// answered until Resume.
func (s *Process) Pause(context.Context) error { return s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Process) Resume(context.Context) error { return s.signal(syscall.SIGCONT) }

func (s *Process) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: server is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Close kills the server and removes its directory.
func (s *Process) Close(ctx context.Context) error {
	return errors.Join(s.Kill(ctx), os.RemoveAll(s.dir))
}

// LogTail returns the end of the server's log, for error messages.
func (s *Process) LogTail() string {
	data, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return ""
	}
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// reap waits for cmd's process to exit, reaping it, and then closes
// exited; kill reports the exit.
func reap(cmd *exec.Cmd, exited chan<- struct{}) {
	defer close(exited)
	_ = cmd.Wait()
}

// waitReady sends to ready whether s answered PING (WaitReady).
func (s *Process) waitReady(ctx context.Context, ready chan<- error) {
	ready <- WaitReady(ctx, s.Addr())
}
