// Package lua holds the Redis scripts that take, release, renew and
// force-release rlock's locks, and those of its semaphores and count-down
// latches, ready to run through rueidis.
//
// Each script is a .lua file whose header names its KEYS, ARGV and reply;
// read it before calling the script. The files are embedded at build time
// and wrapped once in a *rueidis.Lua, whose Exec sends EVALSHA and falls
// back to EVAL when Redis answers NOSCRIPT (after a restart or SCRIPT
// FLUSH). A Source holds a script's text and SHA1 for callers that build
// the EVALSHA themselves, to pipeline it with other commands.
//
// Every script is atomic: no other command runs in Redis while it does.
// The renew script is owner-checked and only lengthens a lease, so resending
// it changes nothing, and it alone is retryable by rueidis. Acquire and
// release set a hold count and must never be resent blindly (Redisson #4871
// is what a blind retry of an unlock does), and neither may the semaphore's
// or the latch's counterparts: every call carries a sequence
// number and the number of a call it supersedes, which fence.lua (shared by
// both, put in after their shebang) records, so that a copy arriving late
// is refused. The protocol around them is package rlock's (request.go).
// Helpers that several scripts share (lease.lua, which every script gets:
// the Redis clock and lengthening a key; fence.lua, token.lua, hold.lua,
// queue.lua, holders.lua, rw.lua) are put in after the shebang of each
// script that uses them.
//
// A fair lock's scripts (fair_acquire.lua, fair_release.lua) take the same
// KEYS, ARGV and replies as acquire and release, and more after them for
// the queue of waiters (queue.lua), whose entries have leases of their own
// that renew keeps alive; the release that frees such a lock hands it to
// the next live waiter and publishes a message addressed to it.
//
// The scripts open with a shebang, which needs Redis 7 or later. Release,
// force-release and renew carry the allow-oom flag, so that locks can still
// be released and renewed when Redis is at maxmemory; acquire does not, so
// at maxmemory Redis refuses new locks cleanly.
package lua
