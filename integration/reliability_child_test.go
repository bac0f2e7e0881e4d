package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// workerEnv carries a child process's procConfig, as JSON. Its presence is
// what makes TestReliabilityWorker run.
const workerEnv = "RLOCK_RELIABILITY_WORKER"

// TestReliabilityWorker is the body of a reliability run's child processes:
// the Reliability tests run this test binary again with workerEnv set, so
// that workers in several OS processes contend for one lock. Run directly,
// it skips.
func TestReliabilityWorker(t *testing.T) {
	raw, ok := os.LookupEnv(workerEnv)
	if !ok {
		t.Skip(workerEnv + " is unset: this test is the worker process that the Reliability tests start themselves")
	}
	var cfg procConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &cfg))
	rec, err := createRecorder(cfg.Out)
	require.NoError(t, err)
	var ctl holdControl
	if cfg.Victim {
		side, err := openVictimSide()
		require.NoError(t, err)
		defer side.Close()
		ctl = side
	}
	if cfg.Starve > 0 {
		defer starveOnSignal(cfg.Starve)()
	}
	runErr := runProcess(t.Context(), cfg, rec, ctl)
	require.NoError(t, errors.Join(runErr, rec.Close()))
}

// child is a worker process the test started.
type child struct {
	cfg    procConfig
	cmd    *exec.Cmd
	output bytes.Buffer // stdout and stderr, read once it has exited
	exited chan struct{}
	err    error       // from Wait
	link   *victimLink // the victim protocol, for the victim
	killed bool        // by the harness, on purpose: its exit is no failure
}

// startChild runs the test binary again as a worker process with cfg. The
// process is killed, if still running, when t ends.
func startChild(t *testing.T, cfg procConfig) *child {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	args := []string{os.Args[0], "-test.run=^TestReliabilityWorker$", "-test.count=1",
		"-test.timeout=" + (cfg.Run + 2*time.Minute).String()}
	if cfg.Netns != "" {
		// ip execs the test binary in the namespace: the child's pid is
		// the binary's own, for the faults that signal it.
		args = append([]string{"ip", "netns", "exec", cfg.Netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	c := &child{cfg: cfg, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &c.output, &c.output

	var theirs []*os.File
	if cfg.Victim {
		sigR, sigW, err := os.Pipe()
		require.NoError(t, err)
		ctlR, ctlW, err := os.Pipe()
		require.NoError(t, err)
		cmd.ExtraFiles = []*os.File{sigW, ctlR} // fd 3 and fd 4 in the child
		theirs = cmd.ExtraFiles
		c.link = &victimLink{signal: sigR, lines: bufio.NewReader(sigR), control: ctlW}
	}
	err = cmd.Start()
	for _, f := range theirs {
		f.Close()
	}
	require.NoError(t, err, "start worker process %s", cfg.Proc)
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
		if c.link != nil {
			c.link.close()
		}
	})
	return c
}

// wait waits up to timeout for the child to exit, kills it after that, and
// fails t if it did not exit cleanly.
func (c *child) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-c.exited:
	case <-timer.C:
		t.Errorf("worker process %s still running after %v: killed", c.cfg.Proc, timeout)
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	if c.err != nil && !c.killed {
		t.Errorf("worker process %s: %v\n%s", c.cfg.Proc, c.err, c.output.String())
	}
}

// victimLink is the test's end of the victim protocol with a child
// process, one line each way: commands on the child's fd 4, "HOLDING
// <token>" back on its fd 3.
type victimLink struct {
	signal  *os.File
	lines   *bufio.Reader
	control *os.File
}

func (l *victimLink) send(cmd string) error {
	_, err := fmt.Fprintln(l.control, cmd)
	return err
}

func (l *victimLink) awaitHolding(timeout time.Duration) (int64, error) {
	if err := l.signal.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	line, err := l.lines.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("waiting for the victim to hold the lock: %w", err)
	}
	tok, ok := strings.CutPrefix(strings.TrimSpace(line), "HOLDING ")
	if !ok {
		return 0, fmt.Errorf("victim said %q, want HOLDING <token>", line)
	}
	return strconv.ParseInt(tok, 10, 64)
}

// close ends the protocol: the child's reader sees end of file.
func (l *victimLink) close() {
	l.control.Close()
	l.signal.Close()
}

// victimSide is the child's end of the victim protocol.
type victimSide struct {
	signal  *os.File
	control *os.File
	cmds    chan string
	quit    chan struct{}
	done    chan struct{}
}

// openVictimSide opens the inherited fds 3 and 4 and starts reading
// commands.
func openVictimSide() (*victimSide, error) {
	// Non-blocking, so that Close interrupts a pending read.
	if err := syscall.SetNonblock(4, true); err != nil {
		return nil, fmt.Errorf("control fd: %w", err)
	}
	v := &victimSide{
		signal:  os.NewFile(3, "victim-signal"),
		control: os.NewFile(4, "victim-control"),
		cmds:    make(chan string),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go v.read()
	return v, nil
}

func (v *victimSide) read() {
	defer close(v.done)
	lines := bufio.NewScanner(v.control)
	for lines.Scan() {
		select {
		case v.cmds <- lines.Text():
		case <-v.quit:
			return
		}
	}
}

func (v *victimSide) armed() bool {
	select {
	case cmd := <-v.cmds:
		return cmd == cmdArm
	default:
		return false
	}
}

func (v *victimSide) holdAndWait(ctx context.Context, token int64) {
	if _, err := fmt.Fprintf(v.signal, "HOLDING %d\n", token); err != nil {
		return
	}
	awaitGo(ctx, v.cmds, v.done)
}

// Close stops the reader and closes both fds.
func (v *victimSide) Close() error {
	close(v.quit)
	err := v.control.Close()
	<-v.done
	return errors.Join(err, v.signal.Close())
}
