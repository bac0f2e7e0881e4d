package redistest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

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
