package rlock

import (
	"context"
	"fmt"
	"time"
	"unique"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// lock is the engine every primitive of the package runs on: one lockable
// resource in Redis (its keys), the kind of hold its owners take, and the
// Client whose slots, request protocol, watchdog and subscriber serve it.
// Mutex is one lock; a primitive with two kinds of hold on one resource
// (read and write) is two locks on the same keys.
type lock struct {
	c    *Client
	name string
	keys unique.Handle[keys.Keys] // interned: handles of one lock share one copy
	kind *kind
	err  error // set when the handle is unusable
}

// kind is what tells the primitives apart on the engine: the scripts that
// take and leave an owner's hold, and the suffix of the owner's field.
//
// Every acquire script takes acquire.lua's KEYS and ARGV and answers as it
// does; every release script takes release.lua's and answers as it does. So
// one request protocol (slots, sequence numbers, fences, settling) serves
// them all.
type kind struct {
	name    string // what the hooks call it: "mutex"
	acquire *lua.Script
	release *lua.Script
	// suffix ends the owner's hash field: two kinds of hold on one lock
	// (read and write) are two fields, two slots and two holds.
	suffix string

	// acquireMore and releaseMore, when set, give the keys and arguments
	// that a kind's scripts take after acquire.lua's and release.lua's (a
	// fair lock's queue); set is the lease the acquire sets.
	acquireMore func(l *lock, set time.Duration) (keys, args []string)
	releaseMore func(l *lock) (keys []string)
	// wait, when set, waits in place of lock.wait (a fair lock's waiters
	// queue in Redis and are handed the lock).
	wait func(l *lock, ctx context.Context, o *owner, wait, lease time.Duration, t *acquireTrace) (context.Context, grant, error)
}

// mutexKind is Mutex's: one reentrant owner at a time.
var mutexKind = &kind{name: "mutex", acquire: lua.Acquire, release: lua.Release}

// newLock returns the engine for the resource called name, of kind k, whose
// keys keysOf builds from the Client's prefix; invalid, when not nil, says
// why the name cannot be a lock.
func newLock(c *Client, name string, k *kind, invalid error, keysOf func(prefix string) keys.Keys) lock {
	l := lock{c: c, name: name, kind: k}
	switch {
	case c == nil || c.rc == nil:
		l.err = ErrNilClient
	case invalid != nil:
		l.err = fmt.Errorf("%w: %w", ErrInvalidName, invalid)
	default:
		l.keys = unique.Make(keysOf(c.cfg.prefix))
	}
	return l
}

// Name returns the resource's name; "" for a nil handle.
func (l *lock) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// check reports why l cannot make calls with ctx, if it cannot.
func (l *lock) check(ctx context.Context) error {
	switch {
	case l == nil || l.c == nil:
		return ErrNilClient
	case l.err != nil:
		return l.err
	case ctx == nil:
		return ErrNilContext
	}
	return l.c.usable()
}

// wrap names the resource in err.
func (l *lock) wrap(err error) error {
	return fmt.Errorf("%w (lock %q)", err, l.Name())
}

// holdID names owner o's hold of l's kind on l.
func (l *lock) holdID(o *owner) holdID {
	return holdID{key: l.keys.Value().Hash, field: l.c.field(o) + l.kind.suffix}
}

// carried returns the active hold on l that ctx carries, if any.
func (l *lock) carried(ctx context.Context) (*hold, bool) {
	o, ok := ownerFrom(ctx)
	if !ok {
		return nil, false
	}
	h, ok := ctx.Value(holdKey{l.c, l.holdID(o)}).(*hold)
	if !ok || !h.active() {
		return nil, false
	}
	return h, true
}
