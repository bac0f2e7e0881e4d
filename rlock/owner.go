package rlock

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
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
	n     uint64  // numbers the owner within this process
	c     *Client // the Client the owner was made in, if any
	field string  // the owner's hash field in c
}

// owners numbers the owners of this process. A number is unique only here,
// but a hash field always pairs it with its Client's UUID.
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

// field is the hash field that names owner o of this Client: made once
// for the Client the owner began in, which a Lock and its Unlock share.
func (c *Client) field(o *owner) string {
	if o.c == c && c != nil {
		return o.field
	}
	return c.fieldOf(o.n)
}

// fieldOf is the hash field of this Client's owner number n,
// <id>:<n in base 36>, in one allocation.
func (c *Client) fieldOf(n uint64) string {
	var b strings.Builder
	b.Grow(len(c.id) + 1 + 13) // 13 base-36 digits hold any uint64
	b.WriteString(c.id)
	b.WriteByte(':')
	var digits [13]byte
	b.Write(strconv.AppendUint(digits[:0], n, 36))
	return b.String()
}

// ownerFrom returns the owner that ctx carries, if any.
func ownerFrom(ctx context.Context) (*owner, bool) {
	o, ok := ctx.Value(ownerKey{}).(*owner)
	return o, ok
}

// withOwner returns ctx and its owner, giving ctx a fresh owner when it
// carries none.
func withOwner(ctx context.Context) (context.Context, *owner) {
	return withOwnerIn(ctx, nil)
}

// withOwnerIn is withOwner for a call of Client c (nil: none): a fresh
// owner has its field in c made once, here.
func withOwnerIn(ctx context.Context, c *Client) (context.Context, *owner) {
	if o, ok := ownerFrom(ctx); ok {
		return ctx, o
	}
	o := &owner{Context: ctx, n: owners.Add(1), c: c}
	if c != nil {
		o.field = c.fieldOf(o.n)
	}
	return o, o
}

// carrying returns ctx carrying owner o.
func carrying(ctx context.Context, o *owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// outliving returns a context with ctx's values (the owner and the holds
// it carries) and the cancellation of the context that ctx's owner began
// with, rather than ctx's, which ends with the holds it carries. A hold
// taken with it outlives them: RWMutex takes the read lock so when the
// owner writes (a downgrade). ctx must carry an owner.
func outliving(ctx context.Context) context.Context {
	o, _ := ownerFrom(ctx)
	return outlivingCtx{Context: o, values: ctx}
}

// outlivingCtx is Context's cancellation with values' values.
type outlivingCtx struct {
	context.Context
	values context.Context
}

func (d outlivingCtx) Value(key any) any {
	return d.values.Value(key)
}

// AfterFunc lets contexts derived from d follow its cancellation without a
// goroutine each (package context looks for this method).
func (d outlivingCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(d.Context, f)
}
