package rlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
	"github.com/rlock/rlock/rlock"
)

// TestLocks runs the Locks suite on every backend, the Cluster included,
// each case under a key prefix of its own.
func TestLocks(t *testing.T) {
	cases := map[string]func(t *testing.T, s redistest.Setup){
		"EveryKind":          testLocksEveryKind,
		"Match":              testLocksMatch,
		"EarlyBreak":         testLocksEarlyBreak,
		"PrefixesApart":      testLocksPrefixesApart,
		"CloseWhileWalking":  testLocksCloseWhileWalking,
		"CancelWhileWalking": testLocksCancelWhileWalking,
	}
	redistest.ForEachSetup(t, func(t *testing.T, s redistest.Setup) {
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				tc(t, s)
			})
		}
	})
}

// prefixed returns an rlock Client of s under a key prefix of the running
// test's own, and the prefix.
func prefixed(t *testing.T, s redistest.Setup) (*rlock.Client, string) {
	t.Helper()
	p := redistest.LockName(t) + ":"
	return newRlock(t, s.Client(t), rlock.WithKeyPrefix(p)), p
}

// locks ranges over c.Locks(match) and returns what it yielded by kind
// and name ("mutex x", "mutex g/x" for grouped x of group g), failing t
// on an error or a lock yielded twice.
func locks(t *testing.T, c *rlock.Client, match string) map[string]rlock.LockState {
	t.Helper()
	out := map[string]rlock.LockState{}
	for st, err := range c.Locks(t.Context(), match) {
		require.NoError(t, err)
		id := string(st.Kind) + " " + st.Name
		if st.Group != "" {
			id = string(st.Kind) + " " + st.Group + "/" + st.Name
		}
		_, twice := out[id]
		require.False(t, twice, "%s yielded twice", id)
		out[id] = st
	}
	return out
}

// ids returns the keys of m.
func ids(m map[string]rlock.LockState) []string {
	var out []string
	for id := range m {
		out = append(out, id)
	}
	return out
}

// testLocksEveryKind: locks of every kind, held, counting or with permits
// only, and grouped ones, on several names (so several masters of a
// Cluster), are each yielded once, with their state; a free lock is not.
func testLocksEveryKind(t *testing.T, s redistest.Setup) {
	c, prefix := prefixed(t, s)
	ctx := t.Context()
	var want []string
	for i := range 4 {
		n := func(kind string) string { return fmt.Sprintf("%s-%d", kind, i) }
		_, err := c.Mutex(n("m")).Lock(ctx)
		require.NoError(t, err)
		_, err = c.RWMutex(n("rw")).RLock(ctx)
		require.NoError(t, err)
		_, err = c.FairMutex(n("f")).Lock(ctx)
		require.NoError(t, err)
		sem := c.Semaphore(n("s"))
		_, err = sem.TrySetPermits(ctx, 2)
		require.NoError(t, err)
		if i%2 == 1 {
			_, err = sem.Acquire(ctx)
			require.NoError(t, err)
		}
		_, err = c.CountDownLatch(n("l")).TrySetCount(ctx, 5)
		require.NoError(t, err)
		_, err = c.GroupedMutex("g}", n("gm")).Lock(ctx)
		require.NoError(t, err)
		want = append(want, "mutex "+n("m"), "rwmutex "+n("rw"), "fairmutex "+n("f"), "semaphore "+n("s"),
			"latch "+n("l"), "mutex g}/"+n("gm"))
	}
	gone := c.Mutex("gone")
	gctx, err := gone.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, gone.Unlock(gctx))

	got := locks(t, c, "")
	assert.ElementsMatch(t, want, ids(got), "every lock that is there, once; not the free one")
	for id, st := range got {
		assert.True(t, strings.HasPrefix(st.Key, prefix), "%s: %s is under the prefix", id, st.Key)
		switch st.Kind {
		case rlock.KindSemaphore:
			assert.Equal(t, 2, st.Permits, id)
			assert.Equal(t, 2-len(st.Holders), st.Available, id)
		case rlock.KindLatch:
			assert.Equal(t, 5, st.Count, id)
		default:
			require.Len(t, st.Holders, 1, id)
			assert.True(t, st.Holders[0].Local, id)
			assert.Positive(t, st.Holders[0].Token, id)
			assert.Positive(t, st.Lease, id)
		}
	}
	if st, ok := got["mutex g}/gm-0"]; assert.True(t, ok) {
		assert.Equal(t, "g}", st.Group)
	}
}

// testLocksMatch: the glob is on the name (a grouped lock's name, not its
// group), Redis's syntax; a malformed one is refused.
func testLocksMatch(t *testing.T, s redistest.Setup) {
	c, _ := prefixed(t, s)
	for _, name := range []string{"a:1", "a:2", "b:1", "x*y", "é"} {
		_, err := c.Mutex(name).Lock(t.Context())
		require.NoError(t, err)
	}
	_, err := c.GroupedMutex("a:", "b:3").Lock(t.Context())
	require.NoError(t, err)
	all := []string{"mutex a:1", "mutex a:2", "mutex b:1", "mutex x*y", "mutex é", "mutex a:/b:3"}
	for match, want := range map[string][]string{
		"":         all,
		"*":        all,
		"a:*":      {"mutex a:1", "mutex a:2"},
		"*:1":      {"mutex a:1", "mutex b:1"},
		"?:[13]":   {"mutex a:1", "mutex b:1", "mutex a:/b:3"},
		"[^a]:?":   {"mutex b:1", "mutex a:/b:3"},
		"[a-a]:2":  {"mutex a:2"},
		`x\*y`:     {"mutex x*y"},
		"x*y":      {"mutex x*y"},
		`x\*z`:     nil,
		"??":       {"mutex é"}, // bytes, as Redis's MATCH
		"a:1*":     {"mutex a:1"},
		"*1*":      {"mutex a:1", "mutex b:1"},
		"b:3":      {"mutex a:/b:3"},
		"nothing*": nil,
	} {
		assert.ElementsMatch(t, want, ids(locks(t, c, match)), "match %q", match)
	}
	for _, bad := range []string{"[", "a[b", `a\`} {
		var errs []error
		for st, err := range c.Locks(t.Context(), bad) {
			assert.Zero(t, st, bad)
			errs = append(errs, err)
		}
		require.Len(t, errs, 1, "%q: one error, then the walk ends", bad)
		assert.ErrorIs(t, errs[0], rlock.ErrInvalidArgument, bad)
	}
}

// testLocksEarlyBreak: a range loop that breaks stops the walk, and the
// Client walks again after.
func testLocksEarlyBreak(t *testing.T, s redistest.Setup) {
	c, _ := prefixed(t, s)
	for i := range 5 {
		_, err := c.Mutex(fmt.Sprint(i)).Lock(t.Context())
		require.NoError(t, err)
	}
	seen := 0
	for _, err := range c.Locks(t.Context(), "*") {
		require.NoError(t, err)
		seen++
		break
	}
	assert.Equal(t, 1, seen)
	assert.Len(t, locks(t, c, "*"), 5, "a later walk sees them all")
}

// testLocksPrefixesApart: two Clients under prefixes where one's quoted
// MATCH would take the other's keys were it a glob ("…:a*:" and
// "…:ab:") each see only their own locks; a Client of the default prefix
// sees neither.
func testLocksPrefixesApart(t *testing.T, s redistest.Setup) {
	base := redistest.LockName(t)
	pa, pb := base+":a*:", base+":ab:"
	a := newRlock(t, s.Client(t), rlock.WithKeyPrefix(pa))
	b := newRlock(t, s.Client(t), rlock.WithKeyPrefix(pb))
	for _, c := range []*rlock.Client{a, b} {
		_, err := c.Mutex("x").Lock(t.Context())
		require.NoError(t, err)
		_, err = c.Semaphore("s").TrySetPermits(t.Context(), 1)
		require.NoError(t, err)
	}
	for p, c := range map[string]*rlock.Client{pa: a, pb: b} {
		got := locks(t, c, "")
		assert.ElementsMatch(t, []string{"mutex x", "semaphore s"}, ids(got), p)
		for _, st := range got {
			assert.True(t, strings.HasPrefix(st.Key, p), "%s is under %s", st.Key, p)
		}
	}
	for _, st := range locks(t, newRlock(t, s.Client(t)), "") {
		assert.False(t, strings.HasPrefix(st.Key, base), "the default prefix's walk met %s", st.Key)
	}
}

// testLocksCloseWhileWalking: Close between two locks of a walk ends it
// with ErrClosed.
func testLocksCloseWhileWalking(t *testing.T, s redistest.Setup) {
	c, prefix := prefixed(t, s)
	holder := newRlock(t, s.Client(t), rlock.WithKeyPrefix(prefix))
	for i := range 10 {
		_, err := holder.Mutex(fmt.Sprint(i)).Lock(t.Context())
		require.NoError(t, err)
	}
	var states int
	var errs []error
	for _, err := range c.Locks(t.Context(), "") {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		states++
		require.NoError(t, c.Close())
	}
	assert.Equal(t, 1, states, "no lock after Close")
	require.Len(t, errs, 1, "one error, then the walk ends")
	assert.ErrorIs(t, errs[0], rlock.ErrClosed)
}

// testLocksCancelWhileWalking: ctx cancelled between two locks of a walk
// ends it with the context's error; the Client walks on with another.
func testLocksCancelWhileWalking(t *testing.T, s redistest.Setup) {
	c, _ := prefixed(t, s)
	for i := range 10 {
		_, err := c.Mutex(fmt.Sprint(i)).Lock(t.Context())
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var states int
	var errs []error
	for _, err := range c.Locks(ctx, "") {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		states++
		cancel()
	}
	assert.Equal(t, 1, states, "no lock after the cancel")
	require.Len(t, errs, 1, "one error, then the walk ends")
	assert.ErrorIs(t, errs[0], context.Canceled)
	assert.Len(t, locks(t, c, ""), 10, "a walk with a live context sees them all")
}

func TestLocksBadInput(t *testing.T) {
	closed, err := rlock.New(redistest.Shared(t).Client(t))
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	var nilClient *rlock.Client
	for what, tc := range map[string]struct {
		c    *rlock.Client
		ctx  context.Context
		want error
	}{
		"nil context": {sharedClient(t), nil, rlock.ErrNilContext},
		"nil Client":  {nilClient, t.Context(), rlock.ErrNilClient},
		"closed":      {closed, t.Context(), rlock.ErrClosed},
	} {
		var errs []error
		for _, err := range tc.c.Locks(tc.ctx, "") {
			errs = append(errs, err)
		}
		require.Len(t, errs, 1, what)
		assert.ErrorIs(t, errs[0], tc.want, what)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	var errs []error
	for _, err := range sharedClient(t).Locks(cancelled, "") {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1, "a done context")
	assert.ErrorIs(t, errs[0], context.Canceled)
}

// TestLocksClusterReplicas walks a Cluster whose masters have replicas:
// every lock once, from its master.
func TestLocksClusterReplicas(t *testing.T) {
	if redistest.Backends(t)[0] == redistest.External {
		t.Skip("REDIS_ADDR is set: the test needs a Cluster it starts")
	}
	cl := redistest.NewCluster(t, redistest.ClusterConfig{ReplicasPerMaster: 1})
	c, _ := prefixed(t, redistest.Setup{Cluster: cl})
	var want []string
	for i := range 12 {
		name := fmt.Sprint(i)
		_, err := c.Mutex(name).Lock(t.Context())
		require.NoError(t, err)
		want = append(want, "mutex "+name)
	}
	assert.ElementsMatch(t, want, ids(locks(t, c, "")))
}
