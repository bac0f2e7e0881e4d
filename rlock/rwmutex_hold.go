package rlock

import (
	"context"
	"fmt"
)

// confirmed returns the hold count of owner o on l that Redis confirmed,
// waiting for o's turn on l.
func (l *lock) confirmed(ctx context.Context, o *owner) (int, error) {
	s, err := l.c.take(ctx, l.holdID(o))
	if err != nil {
		return 0, fmt.Errorf("rlock: acquire: %w", err)
	}
	defer l.c.give(s)
	return s.count, nil
}

// withdraw takes back the waiting mark (or the admission) that owner o's
// refused acquires left on l (see rw.lua), when o stops waiting without
// the lock: a release back to no level removes it, through the request
// protocol, even when ctx is done. If it fails, the mark's own lease ends
// it.
func (l *lock) withdraw(ctx context.Context, o *owner) {
	wctx, cancel := l.c.detached(ctx)
	defer cancel()
	s, err := l.c.take(wctx, l.holdID(o))
	if err != nil {
		return
	}
	defer l.c.give(s)
	if s.count == 0 {
		l.giveBack(wctx, s, 0, "a waiting mark")
	}
}

// downgraded returns the context to take the read lock with while ctx
// carries the write hold of the same lock: ctx's values (the owner and the
// holds), with the cancellation of the context the owner began with
// rather than ctx's, which ends with the write hold. So the read hold's
// context outlives an Unlock of the write hold: a downgrade.
func downgraded(ctx context.Context) context.Context {
	o, _ := ownerFrom(ctx) // a context carrying a hold carries its owner
	return downgradedCtx{Context: o, values: ctx}
}

// downgradedCtx is Context's cancellation with values' values.
type downgradedCtx struct {
	context.Context
	values context.Context
}

func (d downgradedCtx) Value(key any) any {
	return d.values.Value(key)
}

// AfterFunc lets contexts derived from d follow its cancellation without a
// goroutine each (package context looks for this method).
func (d downgradedCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(d.Context, f)
}
