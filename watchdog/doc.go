// Package watchdog keeps distributed locks alive. It renews the lease of
// every registered Hold every Lease/3 until the hold is removed, and reports
// a hold whose lock turned out to be gone.
//
// One Watchdog runs one goroutine, which drives a hashed timer wheel. Holds
// that fall due in the same tick are renewed together, as one round. A
// round's holds are cut into batches of at most MaxBatch keys, one Cluster
// slot per batch on a Cluster, and all its batches go out pipelined in a
// single rueidis call. A round therefore costs Redis calls in proportion to
// its batches, not to its holds.
//
// The renew script replies 1 or 0 for each key. A 1 confirms the hold, and
// Hold.Renewed learns when the confirming request was sent. A 0 means the
// lock is gone or held by another owner: the hold leaves the watchdog and
// Hold.Lost is called. A transport or Redis error is logged and its holds
// are retried on the next tick. The watchdog never decides by itself that a
// lock is lost for want of a reply; its user ends the hold at a local
// deadline computed from the sent times that Renewed reports.
//
// Remove is synchronous: when it returns, no renewal of the hold is in
// flight or will be sent, and no callback of the hold will start. That is
// what keeps a renewal from outliving an unlock (Redisson issue #7272).
package watchdog
