// Package integration holds rlock's tests that cross packages and processes
// against real Redis: the reliability scenarios with workers in child
// processes and their history checkers, Redis-level faults, Cluster slot
// migration, replicas and Sentinel, and the benchmarks beside peer
// libraries; with the demo program (integration/demo) and the benchmark
// table printer (integration/benchtable). Each primitive's own behaviour
// suites live beside it, in rlock/. Nothing imports this package.
//
// README.md in this directory is the maintainers' account: how a
// reliability run works, every scenario and what it showed, the bugs
// planted to test the checks, the soak, and the full benchmark tables
// with the commands that reproduce them.
package integration
