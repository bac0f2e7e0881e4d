package redistest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/keys"
)

func TestSubscribers(t *testing.T) {
	n := Shared(t)
	k := keys.New("redistest:", LockName(t))
	rc := n.Client(t)
	require.Zero(t, countSubscribers(t, rc, k.Channel))

	sub := n.Client(t)
	subscribed := make(chan struct{})
	dc, cancel := sub.Dedicate()
	defer cancel()
	wait := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				close(subscribed)
			}
		},
	})
	require.NoError(t, dc.Do(t.Context(), dc.B().Subscribe().Channel(k.Channel).Build()).Error())
	<-subscribed
	assert.Equal(t, int64(1), countSubscribers(t, rc, k.Channel), "one plain subscriber")

	require.NoError(t, dc.Do(t.Context(), dc.B().Unsubscribe().Channel(k.Channel).Build()).Error())
	AssertNoSubscribers(t, rc, k)
	cancel()
	<-wait
}

// TestAssertNoSubscribersReportsError: when counting fails, the check fails
// its test from the test's goroutine and says why.
func TestAssertNoSubscribersReportsError(t *testing.T) {
	rc := Shared(t).Client(t)
	rc.Close()
	defer func(p time.Duration) { patience = p }(patience)
	patience = time.Second // the count fails every time: no need to wait for long
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		AssertNoSubscribers(rec, rc, keys.New("redistest:", LockName(t)))
	}()
	<-done
	assert.True(t, rec.fatal, "the check stopped its test")
	assert.Contains(t, strings.Join(rec.msgs, "\n"), rueidis.ErrClosing.Error(), "the failure names the error")
}

func countSubscribers(t *testing.T, rc rueidis.Client, channel string) int64 {
	t.Helper()
	n, err := Subscribers(t.Context(), rc, channel)
	require.NoError(t, err)
	return n
}

// recorder is a testing.TB that records failures instead of failing its
// test, so that a test can check what a helper reports. Its Fatalf and
// FailNow end the calling goroutine, as testing.T's do.
type recorder struct {
	testing.TB
	mu    sync.Mutex
	msgs  []string
	fatal bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}

func (r *recorder) FailNow() {
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

// TestReadUsage: a key with an expiry and one without are two keys, one
// volatile, and a large value shows in used_memory.
func TestReadUsage(t *testing.T) {
	rc := Shared(t).Client(t)
	base := LockName(t)
	volatile, lasting := base+":volatile", base+":lasting"
	t.Cleanup(func() { rc.Do(context.Background(), rc.B().Del().Key(volatile, lasting).Build()) })
	before, err := ReadUsage(t.Context(), rc)
	require.NoError(t, err)

	const size = 1 << 20
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(volatile).Value("v").Px(time.Minute).Build()).Error())
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(lasting).Value(strings.Repeat("x", size)).Build()).Error())
	after, err := ReadUsage(t.Context(), rc)
	require.NoError(t, err)

	assert.Equal(t, before.Keys+2, after.Keys, "DBSIZE counts both keys")
	assert.Equal(t, before.Volatile+1, after.Volatile, "one key has an expiry")
	assert.GreaterOrEqual(t, after.UsedMemory-before.UsedMemory, int64(size), "used_memory holds the 1 MiB value")
}

// TestEventually: a wait ends once its check passes, and one that never
// does fails its test from the test's goroutine with the check's last
// reason.
func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, "the third call", func(context.Context) error {
		calls++
		return Exactly("calls", calls, 3)
	})
	assert.Equal(t, 3, calls)

	defer func(p time.Duration) { patience = p }(patience)
	patience = 100 * time.Millisecond
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(rec, "what never comes", func(context.Context) error { return errors.New("still nothing") })
	}()
	<-done
	assert.True(t, rec.fatal, "the wait stopped its test")
	msg := strings.Join(rec.msgs, "\n")
	assert.Contains(t, msg, "what never comes")
	assert.Contains(t, msg, "still nothing", "the failure names the check's last reason")
}
