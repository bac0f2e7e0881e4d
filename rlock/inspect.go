package rlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/lua"
)

// LockState is a snapshot of one lock in Redis, for operators: who holds
// it, how often, for how long, the last fencing token, and whether anyone
// waits. It is a diagnostic, not a synchronisation primitive: the lock may
// change the moment after it was read, so never decide from it whether to
// take, release or use a lock.
type LockState struct {
	Name string
	Key  string // the lock's hash key
	// Type is the Redis type of Key: "hash" for a held lock, "none" for a
	// free one; anything else means something other than rlock wrote Key.
	Type string
	// Lease is what is left of Key's lease: 0 when the lock is free, -1
	// when Key has no expiry.
	Lease time.Duration
	// Holders are the owners' fields in the hash, by field: more than one
	// for primitives with shared holds (readers, permits).
	Holders []Holder
	// Marks are the hash's other fields: "waiters" (a release must
	// publish), and whatever a primitive keeps beside its holders.
	Marks map[string]string
	// FencingToken is the last token handed out on this lock (the current
	// holder's, if the lock is held and no acquire of another kind
	// followed); 0 when none was.
	FencingToken int64
	// Subscribers counts the subscriptions to the lock's unlock channel
	// (PUBSUB NUMSUB, SHARDNUMSUB on a Cluster): one per rlock Client with
	// waiters on this lock, however many waiters each has.
	Subscribers int64
}

// Holder is one owner's hold in a LockState.
type Holder struct {
	// Field is the owner's hash field: <clientID>:<ownerToken>, and the
	// kind's suffix.
	Field string
	// Local says this Client made the hold.
	Local bool
	// Count is the hold count: 1, plus one per re-entry.
	Count int64
	// Lease is what is left of the hold's own lease (F#exp) for a hold that
	// has one beside the key's; 0 for one that has none.
	Lease time.Duration
}

// Inspect reads the state of the lock called name, as Client.Mutex(name)
// names it, in Redis; see LockState. It is a diagnostic for operators, not a
// synchronisation primitive.
func (c *Client) Inspect(ctx context.Context, name string) (LockState, error) {
	return c.Mutex(name).Inspect(ctx)
}

// inspect reads the resource's hash, lease and token in one script, and the
// subscribers of its channel.
func (r *resource) inspect(ctx context.Context) (LockState, error) {
	if err := r.check(ctx); err != nil {
		return LockState{}, r.wrap(err)
	}
	k := r.keys.Value()
	numsub := r.c.rc.B().PubsubNumsub().Channel(k.Channel).Build()
	if r.c.publish == "spublish" {
		numsub = r.c.rc.B().PubsubShardnumsub().Channel(k.Channel).Build()
	}
	snap, err := lua.Inspect.Exec(ctx, r.c.rc, []string{k.Hash, k.Token}, nil).ToArray()
	if err != nil {
		return LockState{}, r.wrap(fmt.Errorf("rlock: inspect: %w", err))
	}
	subs, err := r.c.rc.Do(ctx, numsub).AsIntMap()
	if err != nil {
		return LockState{}, r.wrap(fmt.Errorf("rlock: inspect subscribers: %w", err))
	}
	st, err := r.c.lockState(snap)
	if err != nil {
		return LockState{}, r.wrap(err)
	}
	st.Name, st.Key, st.Subscribers = r.name, k.Hash, subs[k.Channel]
	return st, nil
}

// lockState reads inspect.lua's reply.
func (c *Client) lockState(snap []rueidis.RedisMessage) (LockState, error) {
	if len(snap) != 5 {
		return LockState{}, fmt.Errorf("rlock: unexpected inspect reply of %d entries", len(snap))
	}
	now, err := snap[0].AsInt64()
	if err != nil {
		return LockState{}, fmt.Errorf("rlock: inspect time: %w", err)
	}
	var st LockState
	if st.Type, err = snap[1].ToString(); err != nil {
		return LockState{}, fmt.Errorf("rlock: inspect type: %w", err)
	}
	pttl, err := snap[2].AsInt64()
	if err != nil {
		return LockState{}, fmt.Errorf("rlock: inspect pttl: %w", err)
	}
	switch {
	case pttl == -1:
		st.Lease = -1
	case pttl > 0:
		st.Lease = fromMillis(pttl)
	}
	if token, err := snap[3].ToString(); err == nil {
		st.FencingToken, _ = strconv.ParseInt(token, 10, 64)
	}
	fields, err := snap[4].AsStrMap()
	if err != nil {
		return LockState{}, fmt.Errorf("rlock: inspect fields: %w", err)
	}
	st.Holders, st.Marks = c.holders(fields, now)
	return st, nil
}

// holders sorts a lock hash's fields into holders and marks. A holder is a
// field F with a count beside F#seq (the request protocol's, which every
// primitive on the engine keeps) or F#exp (an own lease, in Redis ms, which
// ends now-ms from now); those two belong to it, every other field is a
// mark.
func (c *Client) holders(fields map[string]string, now int64) ([]Holder, map[string]string) {
	var holders []Holder
	held := map[string]bool{}
	for f, v := range fields {
		_, seq := fields[f+"#seq"]
		exp, own := fields[f+"#exp"]
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || !(seq || own) {
			continue
		}
		h := Holder{Field: f, Local: strings.HasPrefix(f, c.id+":"), Count: n}
		if ends, err := strconv.ParseInt(exp, 10, 64); own && err == nil && ends > now {
			h.Lease = fromMillis(ends - now)
		}
		holders = append(holders, h)
		held[f] = true
	}
	slices.SortFunc(holders, func(a, b Holder) int { return strings.Compare(a.Field, b.Field) })
	var marks map[string]string
	for f, v := range fields {
		if i := strings.LastIndexByte(f, '#'); held[f] || i >= 0 && held[f[:i]] && (f[i:] == "#seq" || f[i:] == "#exp") {
			continue
		}
		if marks == nil {
			marks = map[string]string{}
		}
		marks[f] = v
	}
	return holders, marks
}
