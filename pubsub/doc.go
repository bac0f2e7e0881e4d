// Package pubsub wakes local lock waiters when a lock's unlock channel is
// published to. It is the waiting half of rlock: a waiter subscribes to the
// lock's channel first, then tries the lock, then sleeps until a wake-up.
//
// A Subscriber serves every waiter of one rlock Client over the rueidis
// client's own connections: one subscription per channel, shared by all
// local waiters of that channel and counted by them. The first waiter of a
// channel subscribes (SUBSCRIBE, or SSUBSCRIBE on a Redis Cluster, so that
// the subscription lives on the node that owns the channel's slot); the
// last one to leave unsubscribes.
//
// Wake-ups:
//
//   - One message on a channel wakes one local waiter, the longest-waiting
//     one that has no wake-up pending, so waiters re-check in arrival order
//     and one unlock does not send every waiter at Redis (no thundering
//     herd).
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
package pubsub
