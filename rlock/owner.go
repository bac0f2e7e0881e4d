package rlock

import (
	"context"
	"strconv"
	"sync/atomic"
)

// owner names one logical holder. Go has no thread identity, so ownership
// travels in the context that Lock returns: every call made with that
// context, or one derived from it, acts for the same owner, whichever
// goroutine makes it.
type owner struct {
	token string
}

// owners numbers the owners of this process. A number is unique only here,
// but a hash field always pairs it with its Client's UUID.
var owners atomic.Uint64

// ownerKey is the context key of the owner.
type ownerKey struct{}

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
	o := &owner{token: strconv.FormatUint(owners.Add(1), 36)}
	return carrying(ctx, o), o
}

// carrying returns ctx carrying owner o.
func carrying(ctx context.Context, o *owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}
