package lua

import (
	_ "embed"

	"github.com/redis/rueidis"
)

// The read-write lock's scripts (RWMutex in package rlock). Each kind of
// hold, read and write, has its acquire and release, which take acquire.lua's
// and release.lua's KEYS and ARGV and answer as they do, so the one request
// protocol serves them; rw.lua is the hash they share.
var (
	//go:embed rw.lua
	rwSrc string
	//go:embed rw_read_acquire.lua
	rwReadAcquireSrc string
	//go:embed rw_read_release.lua
	rwReadReleaseSrc string
	//go:embed rw_write_acquire.lua
	rwWriteAcquireSrc string
	//go:embed rw_write_release.lua
	rwWriteReleaseSrc string
	//go:embed rw_state.lua
	rwStateSrc string
)

// withRW returns a read-write lock script with the helpers it calls.
func withRW(script string) string {
	return withHelpers(script, fenceSrc, tokenSrc, rwSrc)
}

var (
	rwReadAcquireText  = withRW(rwReadAcquireSrc)
	rwWriteAcquireText = withRW(rwWriteAcquireSrc)
)

// RWReadAcquire takes or re-enters a read hold; see rw_read_acquire.lua.
var RWReadAcquire = rueidis.NewLuaScript(rwReadAcquireText)

// RWReadAcquireSource is rw_read_acquire.lua for the replica-acknowledged
// acquire, as AcquireSource is acquire.lua.
var RWReadAcquireSource = newSource(rwReadAcquireText)

// RWReadRelease sets a read hold's count lower; see rw_read_release.lua.
var RWReadRelease = rueidis.NewLuaScript(withRW(rwReadReleaseSrc))

// RWWriteAcquire takes or re-enters the write hold, or marks a writer
// waiting; see rw_write_acquire.lua.
var RWWriteAcquire = rueidis.NewLuaScript(rwWriteAcquireText)

// RWWriteAcquireSource is rw_write_acquire.lua for the replica-acknowledged
// acquire, as AcquireSource is acquire.lua.
var RWWriteAcquireSource = newSource(rwWriteAcquireText)

// RWWriteRelease sets the write hold's count lower, or takes back a waiting
// writer's mark; see rw_write_release.lua.
var RWWriteRelease = rueidis.NewLuaScript(withRW(rwWriteReleaseSrc))

// RWState reads a read-write lock's holds without writing; see
// rw_state.lua. It changes nothing, so rueidis may resend it.
var RWState = rueidis.NewLuaScriptRetryable(withRW(rwStateSrc))
