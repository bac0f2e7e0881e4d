package redisserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// InstallTimeout bounds an install of redis-server: apt-get update, then
// apt-get install.
const InstallTimeout = 10 * time.Minute

// Ensure makes sure redis-server is on PATH, so that the demo and the test
// harness run on a machine that has Go and nothing else. When it is
// missing and this process runs as root on a machine with apt-get, Ensure
// installs Debian's redis-server and redis-tools packages the way .ci/run
// does, saying so on w, and stops the system service the package starts:
// rlock runs its own servers. Anywhere else it installs nothing and returns
// an error that names the one command which installs redis-server here.
//
// Processes that call it at once, such as the test binaries of
// go test ./..., install at most once: the install runs under a lock file
// in os.TempDir, and each process looks for redis-server again once it
// holds the lock.
func Ensure(ctx context.Context, w io.Writer) error {
	if HaveRedisServer() {
		return nil
	}
	m := thisMachine()
	if !m.canInstall() {
		return fmt.Errorf("no redis-server found on PATH; install it with:\n\n\t%s\n\nor set REDIS_ADDR=host:port to use a Redis you run", m.fix())
	}
	ctx, cancel := context.WithTimeout(ctx, InstallTimeout)
	defer cancel()
	return installOnce(ctx, w, InstallLockPath(), aptInstaller{w: w})
}

// InstallLockPath is the lock file under which processes install
// redis-server one at a time.
func InstallLockPath() string {
	return filepath.Join(os.TempDir(), "rlock-redis-install.lock")
}

// machine is what decides how redis-server gets onto a machine: its
// operating system, whether this process is root, and the programs on
// PATH.
type machine struct {
	goos string
	root bool
}

// thisMachine is the machine this process runs on.
func thisMachine() machine {
	return machine{goos: runtime.GOOS, root: os.Geteuid() == 0}
}

// canInstall reports whether Ensure installs redis-server itself here:
// as root, on Linux, with apt-get.
func (m machine) canInstall() bool {
	return m.root && m.goos == "linux" && onPath("apt-get")
}

// packageManagers are the commands that install Redis, by the package
// manager that runs them, in the order they are preferred where a machine
// has several. Homebrew comes last: on Linux, where it may sit beside the
// system's own, the system's is preferred; on macOS it is the only one.
var packageManagers = []struct {
	program string
	install string
}{
	{"apt-get", "apt-get install -y redis-server redis-tools"},
	{"dnf", "dnf install -y redis"},
	{"yum", "yum install -y redis"},
	{"zypper", "zypper install -y redis"},
	{"pacman", "pacman -S --noconfirm redis"},
	{"apk", "apk add redis"},
	{"brew", "brew install redis"},
}

// fix is the one command that installs redis-server on m: its package
// manager's, run through sudo (or su, without sudo) unless this process is
// root; Homebrew's as the user, who owns its prefix. Without a package
// manager it names the page that says how to install Redis.
func (m machine) fix() string {
	for _, pm := range packageManagers {
		if !onPath(pm.program) {
			continue
		}
		switch {
		case m.root || pm.program == "brew":
			return pm.install
		case onPath("sudo"):
			return "sudo " + pm.install
		default:
			return "su -c '" + pm.install + "'"
		}
	}
	return "see https://redis.io/docs/latest/operate/oss_and_stack/install/install-redis/ (Redis 7.0 or later)"
}

// onPath reports whether program is an executable on PATH.
func onPath(program string) bool {
	_, err := exec.LookPath(program)
	return err == nil
}

// installer is one way of getting redis-server onto this machine.
type installer interface {
	installed() bool                   // redis-server is there already
	install(ctx context.Context) error // put it there
}

// installOnce runs in's install unless it is installed, holding the lock
// file at lockPath, so that of the processes that call it at once one
// installs and the others, once it is done, find it installed. A wait for
// another's install is reported on w.
func installOnce(ctx context.Context, w io.Writer, lockPath string, in installer) error {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("redisserver: install lock: %w", err)
	}
	defer f.Close() // which releases the lock
	lock := fileLock{f}
	if lock.try(ctx) != nil {
		fmt.Fprintf(w, "rlock: waiting for another process's install of redis-server (%s)...\n", lockPath)
		if err := Poll(ctx, lock.try); err != nil {
			return fmt.Errorf("redisserver: wait for another process's install of redis-server (%s): %w", lockPath, err)
		}
	}
	if in.installed() {
		return nil
	}
	return in.install(ctx)
}

// fileLock is an exclusive flock on an open file, held until it is closed.
type fileLock struct{ f *os.File }

// try takes the lock if no one else holds it.
func (l fileLock) try(context.Context) error {
	return syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// aptInstaller installs redis-server with apt-get, as root, saying what it
// does on w.
type aptInstaller struct{ w io.Writer }

func (a aptInstaller) installed() bool { return HaveRedisServer() }

// install runs apt-get update and apt-get install, as .ci/run does, and
// stops the service that the package starts where it was not installed
// before.
func (a aptInstaller) install(ctx context.Context) error {
	fmt.Fprintln(a.w, "rlock: no redis-server found; installing Debian's redis-server with apt-get (root)...")
	fresh := !debianPackageInstalled(ctx, "redis-server")
	for _, args := range [][]string{
		{"update", "-qq"},
		{"install", "-y", "-qq", "redis-server", "redis-tools"},
	} {
		if err := runApt(ctx, args); err != nil {
			return err
		}
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redisserver: apt-get installed redis-server, but it is not on PATH (%s): %w", os.Getenv("PATH"), err)
	}
	fmt.Fprintf(a.w, "rlock: installed %s (%s)\n", path, Version())
	if fresh {
		a.stopService(ctx)
	}
	return nil
}

// runApt runs apt-get with args, non-interactively, and fails with its
// output.
func runApt(ctx context.Context, args []string) error {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "PATH="+systemPath())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redisserver: apt-get %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// systemPath is PATH with the system's program directories after it:
// dpkg refuses to run without ldconfig and start-stop-daemon on PATH, and
// a root shell's PATH may lack the sbin directories.
func systemPath() string {
	return os.Getenv("PATH") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

// debianPackageInstalled reports whether dpkg has pkg installed.
func debianPackageInstalled(ctx context.Context, pkg string) bool {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && strings.TrimSpace(string(out)) == "install ok installed"
}

// stopService stops the redis-server service that installing the package
// started, with service or else systemctl: it would hold port 6379 for
// nothing, since rlock runs its own servers on ports of their own, which is
// also why one left running is only reported. A machine without either, or
// where the package started nothing, has nothing to stop.
func (a aptInstaller) stopService(ctx context.Context) {
	var status, stop *exec.Cmd
	switch {
	case onPath("service"):
		status = exec.CommandContext(ctx, "service", "redis-server", "status")
		stop = exec.CommandContext(ctx, "service", "redis-server", "stop")
	case onPath("systemctl"):
		status = exec.CommandContext(ctx, "systemctl", "is-active", "--quiet", "redis-server")
		stop = exec.CommandContext(ctx, "systemctl", "stop", "redis-server")
	default:
		return
	}
	env := append(os.Environ(), "PATH="+systemPath())
	status.Env, stop.Env = env, env
	if status.Run() != nil {
		return // not running
	}
	if out, err := stop.CombinedOutput(); err != nil {
		fmt.Fprintf(a.w, "rlock: the redis-server service the package started still runs (%s: %v %s); rlock runs its own servers beside it\n",
			strings.Join(stop.Args, " "), err, strings.TrimSpace(string(out)))
		return
	}
	fmt.Fprintln(a.w, "rlock: stopped the redis-server service the package started; rlock runs its own servers")
}
