package redisserver

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathOf sets PATH, for the rest of t, to a new directory holding an
// executable of each name in programs, and returns the directory.
func pathOf(t *testing.T, programs ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range programs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
	t.Setenv("PATH", dir)
	return dir
}

// TestFixByMachine: the command Ensure names, and whether it installs by
// itself, follow what is on PATH, whether the process is root, and the
// operating system.
func TestFixByMachine(t *testing.T) {
	const apt = "apt-get install -y redis-server redis-tools"
	for _, tc := range []struct {
		name     string
		m        machine
		programs []string
		fix      string
		install  bool
	}{
		{"root with apt-get", machine{"linux", true}, []string{"apt-get", "sudo"}, apt, true},
		{"user with apt-get and sudo", machine{"linux", false}, []string{"apt-get", "sudo"}, "sudo " + apt, false},
		{"user with apt-get, no sudo", machine{"linux", false}, []string{"apt-get"}, "su -c '" + apt + "'", false},
		{"apt-get preferred to brew", machine{"linux", false}, []string{"brew", "apt-get", "sudo"}, "sudo " + apt, false},
		{"root with dnf", machine{"linux", true}, []string{"dnf", "yum"}, "dnf install -y redis", false},
		{"user with apk", machine{"linux", false}, []string{"apk", "sudo"}, "sudo apk add redis", false},
		{"mac with brew", machine{"darwin", false}, []string{"brew", "sudo"}, "brew install redis", false},
		{"root on a mac with apt-get", machine{"darwin", true}, []string{"apt-get"}, apt, false},
		{"no package manager", machine{"linux", true}, []string{"sudo"}, "see https://redis.io/docs/latest/operate/oss_and_stack/install/install-redis/ (Redis 7.0 or later)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pathOf(t, tc.programs...)
			assert.Equal(t, tc.fix, tc.m.fix())
			assert.Equal(t, tc.install, tc.m.canInstall())
		})
	}
}

// TestFixNeedsAnExecutable: a package manager's file that cannot be run
// is not on PATH for the fix.
func TestFixNeedsAnExecutable(t *testing.T) {
	dir := pathOf(t, "sudo")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apt-get"), nil, 0o644))
	m := machine{"linux", true}
	assert.False(t, m.canInstall(), "apt-get is not executable")
	assert.Contains(t, m.fix(), "redis.io", "no package manager can be run")
}

// TestEnsureWithoutRedisServerFails: on a PATH without redis-server and
// without apt-get, Ensure installs nothing and fails with the command that
// installs redis-server, and Find starts nothing.
func TestEnsureWithoutRedisServerFails(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	pathOf(t, "dnf")
	err := Ensure(t.Context(), os.Stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no redis-server found on PATH")
	assert.Contains(t, err.Error(), "dnf install -y redis", "the fix for this PATH")
	assert.Contains(t, err.Error(), "REDIS_ADDR=host:port")
	assert.False(t, HaveRedisServer(), "nothing was installed")

	srv, err := Find(t.Context())
	assert.Nil(t, srv)
	assert.ErrorContains(t, err, "no Redis: no redis-server found on PATH")
}

// fileInstaller "installs" by creating a file, slowly, and counts its
// installs; it fails if another install is under way.
type fileInstaller struct {
	path     string
	installs *atomic.Int32
}

func (f fileInstaller) installed() bool {
	_, err := os.Stat(f.path)
	return err == nil
}

func (f fileInstaller) install(context.Context) error {
	f.installs.Add(1)
	part, err := os.OpenFile(f.path+".part", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err // another install is under way
	}
	time.Sleep(20 * time.Millisecond) // long enough for the others to look
	return errors.Join(part.Close(), os.Rename(f.path+".part", f.path))
}

// TestInstallOnceInstallsOnce: of many callers at once, each with its own
// open lock file as each process of go test ./... has, one installs and the
// others, once it is done, find it installed.
func TestInstallOnceInstallsOnce(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "install.lock")
	in := fileInstaller{path: filepath.Join(dir, "redis-server"), installs: new(atomic.Int32)}
	const callers = 8
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { errs[i] = installOnce(t.Context(), io.Discard, lock, in) })
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "caller %d", i)
	}
	assert.Equal(t, int32(1), in.installs.Load(), "installs")
	assert.True(t, in.installed())
}

// TestInstallOnceWaitsWithinContext: a caller that finds the lock held
// waits for it only as long as its context allows, and installs nothing.
func TestInstallOnceWaitsWithinContext(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "install.lock")
	holder, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer holder.Close()
	require.NoError(t, syscall.Flock(int(holder.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))

	in := fileInstaller{path: filepath.Join(dir, "redis-server"), installs: new(atomic.Int32)}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	var out strings.Builder
	err = installOnce(ctx, &out, lock, in)
	assert.Contains(t, out.String(), "rlock: waiting for another process's install of redis-server")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "wait for another process's install")
	assert.Zero(t, in.installs.Load(), "no install while another holds the lock")

	require.NoError(t, holder.Close())
	require.NoError(t, installOnce(t.Context(), io.Discard, lock, in), "the lock is free once its holder closes it")
	assert.Equal(t, int32(1), in.installs.Load(), "installs")
}
