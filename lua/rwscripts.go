package lua

// The read-write lock's scripts (RWMutex in package rlock). Each kind of
// hold, read and write, has its acquire and release, which take
// acquire.lua's and release.lua's KEYS and ARGV and answer as they do, so
// the one request protocol serves them; rw.lua is the hash they share.

// RWReadAcquire takes or re-enters a read hold; see rw_read_acquire.lua.
var RWReadAcquire = load("rw_read_acquire.lua", once)

// RWReadRelease sets a read hold's count lower; see rw_read_release.lua.
var RWReadRelease = load("rw_read_release.lua", once)

// RWWriteAcquire takes or re-enters the write hold, or marks a writer
// waiting; see rw_write_acquire.lua.
var RWWriteAcquire = load("rw_write_acquire.lua", once)

// RWWriteRelease sets the write hold's count lower, or takes back a waiting
// writer's mark; see rw_write_release.lua.
var RWWriteRelease = load("rw_write_release.lua", once)

// RWState reads a read-write lock's holds without writing; see
// rw_state.lua. It changes nothing, so it is retryable.
var RWState = load("rw_state.lua", retryable)
