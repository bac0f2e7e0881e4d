package rlock

import (
	"context"
	"fmt"
)

// Await returns when the latch's count is 0: at once when it is 0 or was
// never set, else when the CountDown that brings it to 0 wakes it. It
// returns ctx's error, wrapped, when ctx is done first, Redis's when
// reading the count fails, and ErrClosed after Close.
//
// It subscribes to the latch's channel before it reads the count, so a
// CountDown between the two cannot be missed, and then sleeps until a
// message (or a subscription made again after a lost connection, which
// may have lost one) makes it read the count again: it never polls.
func (d *CountDownLatch) Await(ctx context.Context) error {
	l := d.engine()
	if err := l.check(ctx); err != nil {
		return l.wrap(err)
	}
	w, err := l.c.subs.Subscribe(ctx, l.keys.Value().Channel)
	if err != nil {
		if ferr := l.subscribeFailed(ctx, err); ferr != nil {
			err = ferr
		}
		return l.wrap(err)
	}
	defer w.Done(true)
	for {
		n, err := d.Count(ctx)
		switch {
		case err != nil:
			return err
		case n <= 0:
			return nil
		}
		select {
		case <-w.Wake():
		case <-ctx.Done():
			return l.wrap(fmt.Errorf("rlock: await: %w", doneErr(ctx)))
		}
	}
}
