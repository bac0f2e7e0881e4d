#!lua flags=no-writes,allow-stale
--@include lease.lua
-- inspect: a snapshot of one lock, read in one atomic step, for operators
-- (rlock's Inspect). It writes nothing.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] fencing counter   P{N}:token
--
-- Reply (values, not codes): {now, type, pttl, token, fields}
--   now     Redis time in ms: what own leases (F#exp) are measured against
--   type    the Redis type of KEYS[1]: 'hash', 'none' when the lock is free
--   pttl    PTTL of KEYS[1]: -2 absent, -1 no expiry
--   token   the last fencing token handed out, as a string; false if none
--           (or the key is not a string)
--   fields  HGETALL of KEYS[1] as {field, value, ...}; empty unless a hash
local now = nowMs()
local kind = redis.call('type', KEYS[1])['ok']
local fields = {}
if kind == 'hash' then
    fields = redis.call('hgetall', KEYS[1])
end
local token = false
if redis.call('type', KEYS[2])['ok'] == 'string' then
    token = redis.call('get', KEYS[2])
end
return {now, kind, redis.call('pttl', KEYS[1]), token, fields}
