// Package pubsub lets many local goroutines wait on Redis channels through
// one shared subscription per channel, each message waking one of them.
//
// It is the waiting half of a lock: a waiter subscribes to the lock's
// unlock channel first, then tries the lock, then sleeps until a wake-up or
// until the holder's lease would run out, and tries again. Subscribing
// first is what makes an unlock between the try and the sleep impossible to
// miss:
//
//	subs := pubsub.New(rc, rc.Mode() == rueidis.ClientModeCluster, 0, nil, "")
//	defer subs.Close()
//
//	w, err := subs.Subscribe(ctx, "locks:{job}:unlock")
//	if err != nil {
//		return err
//	}
//	acquired := false
//	defer func() { w.Done(acquired) }() // hands an unused wake-up on
//	timer := time.NewTimer(time.Hour)
//	defer timer.Stop()
//	for {
//		var left time.Duration // the holder's lease left
//		if acquired, left = tryLock(); acquired {
//			return nil
//		}
//		timer.Reset(left)
//		select {
//		case <-w.Wake(): // a message, a resubscription, or a wake-up handed on
//		case <-timer.C: // the holder's lease ran out: expiry publishes nothing
//		case <-ctx.Done():
//			return ctx.Err()
//		}
//	}
//
// A Subscriber works over the rueidis client's own connections: one
// subscription per channel, shared by all local waiters of that channel and
// counted by them, with one goroutine per subscribed channel. The first
// waiter of a channel subscribes (SUBSCRIBE, or SSUBSCRIBE on a Redis
// Cluster, so that the subscription lives on the node that owns the
// channel's slot, where SPUBLISH delivers); once the last one has left,
// the subscription lingers for the time New was given, so that a waiter
// that comes back within it is ready at once, and then ends.
//
// Wake-ups:
//
//   - One message on a channel wakes one local waiter, the longest-waiting
//     one that has no wake-up pending, so waiters re-check in arrival order
//     and one unlock does not send every waiter at Redis (no thundering
//     herd). The message WakeAll wakes every waiter instead: for a release
//     that frees the resource for many at once (readers after a writer).
//   - A message addressed to the Subscriber ("@<id>", Addressed, id given
//     to New) wakes one of its waiters, and no other Subscriber's: a lock
//     that records which processes wait wakes one waiter in the whole
//     deployment. Sent on the Subscriber's Inbox for the channel, which it
//     subscribes to with the channel, it reaches no other process at all.
//     Waiter.Done tells the channel's last waiter that it is the last, so
//     that it can give such a wake-up back to the publisher.
//   - After the subscription is lost and made again (a reconnect, a slot
//     migration), every waiter of the channel is woken: a message may have
//     been published while nobody listened.
//   - A waiter that an unlock woke but that leaves without the lock
//     (cancelled, timed out, failed) hands the wake-up on to the next
//     waiter, so an unlock is never swallowed by a waiter that gave up.
//
// Together these keep the promise Subscribe makes: a message published after
// Subscribe returns either wakes a waiter of the channel or is followed by a
// wake-up of all of them.
//
// Close closes every waiter's Wake channel, so that none sleeps through it
// (a loop like the one above must then stop by its own means, as rlock's
// does on its Client's Close), fails every Subscribe still waiting with
// ErrClosed, unsubscribes, and returns once its goroutines have exited. It
// does not close the rueidis client.
package pubsub
