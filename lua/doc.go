// Package lua holds every Redis script rlock runs, one .lua file each.
//
// Each file opens with a header naming its KEYS, ARGV and reply. The scripts
// are embedded at build time and wrapped once in rueidis.Lua, so a call sends
// EVALSHA and falls back to EVAL when Redis answers NOSCRIPT (after a restart
// or SCRIPT FLUSH).
//
// Only Renew is marked retryable: it is owner-checked and sets an absolute
// lease, so sending it twice changes nothing. Acquire and Release change a hold
// count; they are made safe to resend by a per-request latch key instead, and
// the caller decides when to resend (Redisson #4871 is what a blind retry of
// an unlock does).
//
// The scripts open with a shebang, which needs Redis 7 or later. Release,
// ForceRelease and Renew carry the allow-oom flag so that locks can still be
// released and renewed when Redis is at maxmemory; Acquire does not, so at
// maxmemory Redis refuses new locks cleanly.
package lua
