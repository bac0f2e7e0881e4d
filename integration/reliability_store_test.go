package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/rlock"
)

// fencedWrite is the downstream store's guard: it accepts a write only if
// its fencing token is higher than any it has seen, so a holder whose lock
// was lost (and has been handed on, with a higher token) is turned away.
//
// KEYS[1] the highest token accepted so far
// KEYS[2] the log of accepted writes, oldest first: "<token> <writer>"
// ARGV[1] the writer's fencing token
// ARGV[2] the writer (its lock owner)
//
// Reply: 1 accepted, 0 rejected.
var fencedWrite = rueidis.NewLuaScript(`
local seen = tonumber(redis.call('get', KEYS[1]) or '0')
if tonumber(ARGV[1]) <= seen then
    return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('rpush', KEYS[2], ARGV[1] .. ' ' .. ARGV[2])
return 1
`)

// Keys of the store node, which serves one run only, for each lock (a
// colon and the lock's name follow).
const (
	storeMaxKey  = "fenced:max"
	storeLogKey  = "fenced:log"
	storeCounter = "counter"
)

// fencedStore is the Redis node, separate from the lock's, that plays the
// resource a lock protects: the fenced writes and the counter of lock.
type fencedStore struct {
	rc   rueidis.Client
	lock string
}

// key is the store's key base for its lock.
func (s fencedStore) key(base string) string { return base + ":" + s.lock }

// fencedEntry is one write the store accepted.
type fencedEntry struct {
	token int64
	owner string
}

// write offers a write with token and reports whether the store took it.
func (s fencedStore) write(ctx context.Context, token int64, owner string) (bool, error) {
	n, err := fencedWrite.Exec(ctx, s.rc, []string{s.key(storeMaxKey), s.key(storeLogKey)},
		[]string{strconv.FormatInt(token, 10), owner}).AsInt64()
	return n == 1, err
}

// maxToken is the highest token the store has accepted.
func (s fencedStore) maxToken(ctx context.Context) (int64, error) {
	n, err := s.rc.Do(ctx, s.rc.B().Get().Key(s.key(storeMaxKey)).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, err
}

// counter reads the counter; an absent counter is 0.
func (s fencedStore) counter(ctx context.Context) (int64, error) {
	n, err := s.rc.Do(ctx, s.rc.B().Get().Key(s.key(storeCounter)).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, err
}

// setCounter writes the counter.
func (s fencedStore) setCounter(ctx context.Context, n int64) error {
	return s.rc.Do(ctx, s.rc.B().Set().Key(s.key(storeCounter)).Value(strconv.FormatInt(n, 10)).Build()).Error()
}

// state reads the accepted writes and the counter at the end of a run.
func (s fencedStore) state(ctx context.Context) (storeState, error) {
	lines, err := s.rc.Do(ctx, s.rc.B().Lrange().Key(s.key(storeLogKey)).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return storeState{}, err
	}
	st := storeState{log: make([]fencedEntry, 0, len(lines))}
	for _, line := range lines {
		tok, owner, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return storeState{}, fmt.Errorf("fenced log entry %q: %w", line, err)
		}
		st.log = append(st.log, fencedEntry{token: n, owner: owner})
	}
	st.counter, err = s.counter(ctx)
	return st, err
}

// opGuarded is a write to the lock's own node made only through Do, in
// the same script as the check that the hold lives; Read is the token of
// the guarded write that landed before it (0: none).
const opGuarded = "guarded"

// guardedLocker is a lock whose holder can make guarded writes: Mutex,
// FairMutex and RWMutex (its write hold), not a reader or a RedLock.
type guardedLocker interface {
	Do(ctx context.Context, cmds ...rueidis.Completed) ([]rueidis.RedisMessage, error)
	Key(suffix string) string
}

// guardedWrite appends "<token> <owner>" to the lock's guarded log, a key
// in its slot on its node, through Do with lctx, and returns the token of
// the entry before it. failed says that Do ran nothing: the owner did not
// hold the lock.
func guardedWrite(lctx context.Context, g guardedLocker, b rueidis.Builder, token int64, owner string) (prev int64, failed bool, err error) {
	key := g.Key("guarded")
	res, err := g.Do(lctx,
		b.Lindex().Key(key).Index(-1).Build(),
		b.Rpush().Key(key).Element(strconv.FormatInt(token, 10)+" "+owner).Build())
	if err != nil {
		return 0, errors.Is(err, rlock.ErrLockLost) || errors.Is(err, rlock.ErrNotHeld), err
	}
	last, err := res[0].ToString()
	if rueidis.IsRedisNil(err) {
		return 0, false, res[1].Error()
	}
	if err != nil {
		return 0, false, err
	}
	tok, _, _ := strings.Cut(last, " ")
	prev, err = strconv.ParseInt(tok, 10, 64)
	if err == nil {
		err = res[1].Error()
	}
	return prev, false, err
}
