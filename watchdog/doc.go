// Package watchdog keeps the leases of many Redis locks alive at a cost that
// grows with the number of batches, not of locks.
//
// A lock here is a Redis hash whose owner field marks the holder and whose
// PEXPIRE is the lease, as rlock lays them out. Add an Entry (the hash key
// and the owner field) to a Watchdog, and every Lease/3 it sets the key's
// lease again, as long as the field is there, until the Entry is removed:
//
//	w, err := watchdog.New(rc, watchdog.Config{Lease: 30 * time.Second})
//	if err != nil {
//		return err
//	}
//	defer w.Close()
//
//	h := &watchdog.Entry{
//		Key:    "locks:{job}", // the lock's hash
//		Field:  "owner-1",     // its holder's field in that hash
//		Holder: job,           // its Renewed(sent): the lease lasts until sent+Lease at least;
//		                       // its Lost(entry): the field is gone, the lock is no longer held
//	}
//	if err := w.Add(h); err != nil {
//		return err
//	}
//	// ... and when the lock is released:
//	w.Remove(h) // once it returns, no renewal of h is in flight or will be sent
//
// One Watchdog runs one goroutine, which drives a hashed timer wheel.
// Entries that fall due in the same tick are renewed together, as one
// round. A round's entries are cut into batches of at most MaxBatch keys, one Cluster
// slot per batch on a Cluster, and all its batches go out pipelined. A
// round therefore costs Redis calls in proportion to its batches, not to
// its entries. The renew script is owner-checked, so resending it is safe,
// and it runs when Redis is at maxmemory.
//
// The renew script replies 1 or 0 for each key. A 1 confirms the entry,
// and its Holder's Renewed learns when the confirming request was sent. A 0
// means the lock is gone or held by another owner: the entry leaves the
// watchdog and its Holder's Lost is called. A transport or Redis error is logged and its
// entries are retried on the next tick. The watchdog never decides by itself that a
// lock is lost for want of a reply; its user ends the hold at a local
// deadline computed from the sent times that Renewed reports.
//
// Remove is synchronous: when it returns, no renewal of the entry is in
// flight or will be sent, and no callback of the entry will start. That is
// what keeps a renewal from outliving an unlock (Redisson issue #7272).
// Close stops the goroutine and drops every entry without callbacks; it does
// not close the rueidis client.
package watchdog
