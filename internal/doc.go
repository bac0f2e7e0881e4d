// Package internal has no code of its own. Its subpackages are what this
// module's packages share and what code outside the module cannot import
// (the go command enforces it), so they may change with rlock at any time:
//
//   - keys names the Redis keys and the unlock channel of one lock, all in
//     one Cluster slot, and checks lock names and key prefixes.
//   - slot computes Redis Cluster hash slots (CRC16 of the key or of its
//     hash tag), so that work on many keys can be cut into single-slot
//     batches.
//   - redistest starts real Redis servers for tests, benchmarks, Examples
//     and the demo (a single node, a Cluster, a Sentinel setup, on Docker or
//     as child processes, or the server REDIS_ADDR names), and hurts them on
//     demand: pause, kill, restart empty, and a proxy that slows or cuts the
//     link.
//   - hooktest records what rlock's hooks report, for tests, and checks
//     that the events balance.
package internal
