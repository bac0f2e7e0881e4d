// Package integration holds rlock's tests that cross packages and processes
// against real Redis: reliability runs with workers in child processes,
// Redis-level faults, slot migration, replicas and Sentinel, benchmarks
// against peer libraries, and the demo program (integration/demo). The
// Mutex's own behaviour suites live beside it, in rlock/. Nothing imports
// this package.
package integration
