package rlock

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
)

// owner names one logical holder. Go has no thread identity, so ownership
// travels in the context that Lock returns: every call made with that
// context, or one derived from it, acts for the same owner, whichever
// goroutine makes it.
//
// An owner is itself the context that first carries it (one allocation for
// both, which a waiter keeps while it waits).
type owner struct {
	context.Context
	n uint64 // numbers the owner within this process
}

// owners numbers the owners of this process. A number is unique only here,
// but a hash field always pairs it with its Client's id.
var owners atomic.Uint64

// ownerKey is the context key of the owner.
type ownerKey struct{}

// Value returns o for ownerKey, and defers to the parent otherwise.
func (o *owner) Value(key any) any {
	if key == (ownerKey{}) {
		return o
	}
	return o.Context.Value(key)
}

// newClientID returns a new Client's id: a random UUID spelled in
// unpadded base64url, 22 characters where its usual spelling takes 36, so
// that an owner's field (<id>:<owner>) fits in 32 bytes for the first 36^9
// owners of a process. Every held lock keeps its field, and every call
// sends it. The alphabet has no ':', which ends the id in a field.
func newClientID() string {
	u := uuid.New()
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// field is the hash field that names owner o of this Client.
func (c *Client) field(o *owner) string {
	return c.kindField(o, "")
}

// kindField is owner o's field followed by suffix (a kind's):
// <id>:<o.n in base 36><suffix>, in one allocation.
func (c *Client) kindField(o *owner, suffix string) string {
	var digits [13]byte // any uint64 in base 36
	n := strconv.AppendUint(digits[:0], o.n, 36)
	var b strings.Builder
	b.Grow(len(c.id) + 1 + len(n) + len(suffix))
	b.WriteString(c.id)
	b.WriteByte(':')
	b.Write(n)
	b.WriteString(suffix)
	return b.String()
}

// isKindField reports whether f is c.kindField(o, suffix), without making
// that.
func (c *Client) isKindField(f string, o *owner, suffix string) bool {
	var digits [13]byte
	n := strconv.AppendUint(digits[:0], o.n, 36)
	id, rest, ok := strings.Cut(f, ":")
	return ok && id == c.id && len(rest) == len(n)+len(suffix) && rest[:len(n)] == string(n) && rest[len(n):] == suffix
}

// ownerFrom returns the owner that ctx carries, if any.
func ownerFrom(ctx context.Context) (*owner, bool) {
	o, ok := ctx.Value(ownerKey{}).(*owner)
	return o, ok
}

// withOwner returns ctx and its owner, giving ctx a fresh owner when it
// carries none.
func withOwner(ctx context.Context) (context.Context, *owner) {
	if o, ok := ownerFrom(ctx); ok {
		return ctx, o
	}
	o := &owner{Context: ctx, n: owners.Add(1)}
	return o, o
}

// carrying returns ctx carrying owner o.
func carrying(ctx context.Context, o *owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// outliving returns ctx, marked so that a hold taken with it outlives
// the holds ctx carries: the call (its wait, its requests) runs under
// ctx's cancellation, and the lock context it returns is bound to its
// lasting context instead (hold.bind). RWMutex takes the read lock so when
// the owner writes (a downgrade). ctx must carry an owner.
func outliving(ctx context.Context) context.Context {
	return outlivingCtx{ctx}
}

// outlivingCtx is a call's context whose hold outlives the holds it
// carries (outliving).
type outlivingCtx struct {
	context.Context
}

// lasting returns what a hold taken with d is bound to: d's values (the
// owner and the holds it carries) with the cancellation of the context
// that d's owner began with, rather than d's, which ends with those holds.
func (d outlivingCtx) lasting() context.Context {
	o, _ := ownerFrom(d)
	return lastingCtx{Context: o, values: d.Context}
}

// lastingCtx is Context's cancellation with values' values.
type lastingCtx struct {
	context.Context
	values context.Context
}

func (d lastingCtx) Value(key any) any {
	return d.values.Value(key)
}

// AfterFunc lets contexts derived from d follow its cancellation without a
// goroutine each (package context looks for this method).
func (d lastingCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(d.Context, f)
}
