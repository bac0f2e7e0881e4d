package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/rlock/rlock/internal/keys"
	"github.com/rlock/rlock/lua"
)

// resource is one named thing in Redis that a handle stands for: its name,
// its keys, and the Client that serves it. Every primitive is one (or, for
// RWMutex, two locks on one); a CountDownLatch is a resource and nothing
// more.
type resource struct {
	c    *Client
	name string
	keys keys.Ref // its hash key; the others are made per call (keys.Ref.Value)
	err  error    // set when the handle is unusable
}

// newResource returns the resource called name, whose keys k stands for, or one
// whose calls fail: c is not a Client made by New, or invalid says why the
// name names nothing.
func newResource(c *Client, name string, invalid error, k keys.Ref) resource {
	r := resource{c: c, name: name}
	switch {
	case c == nil || c.rc == nil:
		r.err = ErrNilClient
	case invalid != nil:
		r.err = fmt.Errorf("%w: %w", ErrInvalidName, invalid)
	default:
		r.keys = k
	}
	return r
}

// Name returns the resource's name; "" for a nil handle.
func (r *resource) Name() string {
	if r == nil {
		return ""
	}
	return r.name
}

// check reports why r cannot make calls with ctx, if it cannot: a nil
// handle or Client, a bad name, a nil ctx, or a Client that Close began to
// close.
func (r *resource) check(ctx context.Context) error {
	switch {
	case r == nil || r.c == nil:
		return ErrNilClient
	case r.err != nil:
		return r.err
	case ctx == nil:
		return ErrNilContext
	}
	select {
	case <-r.c.closed:
		return ErrClosed
	default:
		return nil
	}
}

// wrap names the resource in err.
func (r *resource) wrap(err error) error {
	return fmt.Errorf("%w (lock %q)", err, r.Name())
}

// lock is a resource that owners hold: the engine that every lock-like
// primitive runs on. Its kind says which scripts take and release a hold;
// see kind.go.
type lock struct {
	resource
	kind *kind
}

// nilLock is the engine of a nil handle: its resource has no Client, so
// its calls fail with ErrNilClient, where a call on nil would panic.
var nilLock lock

// newLock returns the lock of kind k called name; see newResource.
func newLock(c *Client, name string, k *kind, invalid error, ks keys.Ref) lock {
	return lock{resource: newResource(c, name, invalid, ks), kind: k}
}

// holdID names owner o's hold of l's kind on l.
func (l *lock) holdID(o *owner) holdID {
	return holdID{key: l.keys.Hash(), field: l.c.kindField(o, l.kind.suffix)}
}

// boundHold returns the hold on l of owner o that ctx carries, ended or
// not, and its id; or nil and holdID(o) when ctx carries none. An Unlock
// with its lock context makes no field.
func (l *lock) boundHold(ctx context.Context, o *owner) (holdID, *hold) {
	key := l.keys.Hash()
	for h, up := nearestBound(ctx); h != nil; h, up = nearestBound(up) {
		if id := h.id(); h.client() == l.c && id.key == key && l.c.isKindField(id.field, o, l.kind.suffix) {
			return id, h
		}
	}
	return l.holdID(o), nil
}

// carried returns the active hold on l that ctx carries, if any.
func (l *lock) carried(ctx context.Context) (*hold, bool) {
	o, ok := ownerFrom(ctx)
	if !ok {
		return nil, false
	}
	h := carriedHold(ctx, l.c, l.holdID(o))
	if h == nil || !h.active() {
		return nil, false
	}
	return h, true
}

// isLocked reports whether the lock's hash exists.
func (l *lock) isLocked(ctx context.Context) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, l.wrap(err)
	}
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Exists().Key(l.keys.Hash()).Build()).AsInt64()
	if err != nil {
		return false, l.wrap(fmt.Errorf("rlock: exists: %w", err))
	}
	return n == 1, nil
}

// holdCount reads the count of ctx's owner's field of l's kind; 0 when ctx
// names no owner, the field is missing or its own lease (a semaphore
// holder's) has ended. Like Unlock it answers for a done context, bounded
// by the retry timeout.
func (l *lock) holdCount(ctx context.Context) (int, error) {
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	o, ok := ownerFrom(ctx)
	if !ok {
		return 0, nil
	}
	ctx, cancel := l.c.detached(ctx)
	defer cancel()
	n, err := lua.HoldCount.Exec(ctx, l.c.rc, []string{l.keys.Hash()}, []string{l.holdID(o).field}).AsInt64()
	if err != nil {
		return 0, l.wrap(fmt.Errorf("rlock: hold count: %w", err))
	}
	return int(n), nil
}

// remainingLease reads the PTTL of the lock's hash: 0 when it is gone.
func (l *lock) remainingLease(ctx context.Context) (time.Duration, error) {
	if err := l.check(ctx); err != nil {
		return 0, l.wrap(err)
	}
	ms, err := l.c.rc.Do(ctx, l.c.rc.B().Pttl().Key(l.keys.Hash()).Build()).AsInt64()
	if err != nil {
		return 0, l.wrap(fmt.Errorf("rlock: pttl: %w", err))
	}
	return time.Duration(max(ms, 0)) * time.Millisecond, nil
}

// fencingToken is the token of the active hold on l that ctx carries.
func (l *lock) fencingToken(ctx context.Context) (int64, bool) {
	if l.check(ctx) != nil {
		return 0, false
	}
	h, ok := l.carried(ctx)
	if !ok {
		return 0, false
	}
	return h.token, true
}
