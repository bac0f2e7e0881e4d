package redistest

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// FakeClock is a wall clock that a redis-server runs on instead of the
// machine's, so that a test can make it jump, as a bad NTP step would. A
// small LD_PRELOAD library, compiled from fakeClockSource with the C
// compiler when the clock is made, adds an offset to every realtime clock
// reading (clock_gettime, gettimeofday, time), which is the clock Redis
// sets and checks key expiry by; the monotonic clock stays true. The offset
// lives in a file the library maps, so a jump takes effect at once.
// Debian's libfaketime would do the same, but its 0.9.10 cannot start
// redis-server 7 (jemalloc's first clock call recurses into it and fails).
// Start a node with Config{Backend: Process, Env: c.Env()}.
type FakeClock struct {
	lib  string // the compiled library
	file string // the offset: nanoseconds, a little-endian int64

	mu     sync.Mutex
	offset time.Duration
}

// NewFakeClock returns a clock at the true time. It fails t when there is
// no C compiler (cc) to build the library.
func NewFakeClock(t testing.TB) *FakeClock {
	t.Helper()
	dir := t.TempDir()
	c := &FakeClock{lib: filepath.Join(dir, "fakeclock.so"), file: filepath.Join(dir, "offset")}
	src := filepath.Join(dir, "fakeclock.c")
	if err := os.WriteFile(src, []byte(fakeClockSource), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-O2", "-o", c.lib, src).CombinedOutput(); err != nil {
		t.Fatalf("redistest: a fake clock needs a C compiler (apt-get install gcc): cc: %v: %s", err, out)
	}
	if err := c.write(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// Env is the environment that puts redis-server on this clock.
func (c *FakeClock) Env() []string {
	return []string{"LD_PRELOAD=" + c.lib, "RLOCK_FAKECLOCK=" + c.file}
}

// Jump moves the clock forward by d, at once.
func (c *FakeClock) Jump(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
	return c.write()
}

// write stores the offset in place, in one 8-byte write, where the mapped
// pages of every reader see it.
func (c *FakeClock) write() error {
	f, err := os.OpenFile(c.file, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(binary.LittleEndian.AppendUint64(nil, uint64(c.offset.Nanoseconds())), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fake clock offset: %w", err)
	}
	return nil
}

// fakeClockSource is the LD_PRELOAD library. It reads the clock with the
// raw system call and maps the offset file with no allocation, so that it
// works from a process's first clock call on, inside malloc's start-up.
const fakeClockSource = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset; /* nanoseconds added to the realtime clock */
static volatile int tried;

static int64_t shift(void) {
	if (!tried) {
		const char *path = getenv("RLOCK_FAKECLOCK");
		tried = 1;
		if (path) {
			int fd = open(path, O_RDONLY);
			if (fd >= 0) {
				void *p = mmap(0, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
				close(fd);
				if (p != MAP_FAILED) offset = p;
			}
		}
	}
	return offset ? *offset : 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	long r = syscall(SYS_clock_gettime, clk, ts);
	if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
		int64_t ns = ts->tv_nsec + shift();
		ts->tv_sec += ns / 1000000000;
		ts->tv_nsec = ns % 1000000000;
		if (ts->tv_nsec < 0) {
			ts->tv_nsec += 1000000000;
			ts->tv_sec--;
		}
	}
	return (int)r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	struct timespec ts;
	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t) *t = ts.tv_sec;
	return ts.tv_sec;
}
`
