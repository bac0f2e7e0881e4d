// Package integration holds rlock's tests across packages against real
// Redis: the Mutex suite run over every harness backend, fault scenarios,
// benchmarks, and the demo program (integration/demo). Nothing imports it.
package integration
