package rlock

import (
	"context"
	"sync"
)

// lifetime is how long a hold lasts. It is a context, done with the hold's
// cause when the hold ends, and it ends every lock context bound to it in
// that same moment: a caller that sees the final Unlock return, or a loss
// detected, sees its lock context done. (context.AfterFunc would end them a
// goroutine later.)
type lifetime struct {
	context.Context
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	ended bool
	bound []context.CancelCauseFunc // lock contexts to end with the hold
}

func newLifetime() *lifetime {
	l := &lifetime{}
	l.Context, l.cancel = context.WithCancelCause(context.Background())
	return l
}

// bind returns a context derived from parent, carrying val under key, that
// is done when parent is or when the lifetime ends, with the lifetime's
// cause.
func (l *lifetime) bind(parent context.Context, key, val any) context.Context {
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, key, val))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		cancel(context.Cause(l))
	} else {
		l.bound = append(l.bound, cancel)
	}
	return ctx
}

// end ends the lifetime with cause, once; it reports whether this call did.
func (l *lifetime) end(cause error) bool {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return false
	}
	l.ended = true
	bound := l.bound
	l.bound = nil
	l.mu.Unlock()
	l.cancel(cause)
	for _, cancel := range bound {
		cancel(cause)
	}
	return true
}
