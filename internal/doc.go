// Package internal has no code of its own. Its subpackages are what this
// module's packages share and what code outside the module cannot import
// (the go command enforces it), so they may change with rlock at any time:
//
//   - keys names the Redis keys and the unlock channel of one lock, all in
//     one Cluster slot, and checks lock names and key prefixes.
//   - alarm keeps many deadlines on one timer: a Client's hold deadlines,
//     a Subscriber's waiters' wake-ups.
//   - slot computes Redis Cluster hash slots (CRC16 of the key or of its
//     hash tag), so that work on many keys can be cut into single-slot
//     batches.
//   - redisserver finds or starts one real Redis without any test
//     dependency: the server REDIS_ADDR names, or redis-server run as a
//     child process on a free loopback port. The demo uses it, and
//     redistest starts its child processes through it.
//   - redistest starts real Redis servers for tests, benchmarks and
//     Examples (a single node, a Cluster, a Sentinel setup, on Docker or
//     as child processes, or the server REDIS_ADDR names), hurts them on
//     demand (pause, kill, restart empty, and a proxy that slows or cuts
//     the link), and reads a lock's state from Redis for tests that wait on
//     it.
//
// None of them imports package rlock: they are leaves that rlock and its
// tests import. What records rlock's hooks for tests is rlock/hooktest.
package internal
