#!lua flags=no-writes,allow-stale
--@include lease.lua
-- inspect: a snapshot of one or more locks of one name (each kind's keys,
-- all in the name's slot), read in one atomic step, for operators (rlock's
-- Inspect and Locks). It writes nothing.
--
-- KEYS in threes, one three per lock:
-- KEYS[i]   lock hash         P{N}, P{N}:rw, P{N}:fair, P{N}:semaphore, ...
-- KEYS[i+1] counter           the fencing counter P{N}:token; a semaphore's
--                             permits P{N}:semaphore:permits
-- KEYS[i+2] queue             a fair lock's P{N}:fair:queue (another kind's
--                             Queue key, which it never writes, reads empty)
--
-- Reply (values, not codes): {now, lock, lock, ...}, a lock per three keys:
--   now     Redis time in ms: what own leases (F#exp) are measured against
--   lock    {type, pttl, counter, fields, queue}:
--     type     the Redis type of the hash: 'hash', 'none' when it is absent
--     pttl     PTTL of the hash: -2 absent, -1 no expiry
--     counter  the counter's value as a string; false if none (or the key
--              is not a string)
--     fields   HGETALL of the hash as {field, value, ...}; empty unless a
--              hash
--     queue    HGETALL of the queue, the same way
local function hashOf(key)
    if redis.call('type', key)['ok'] == 'hash' then
        return redis.call('hgetall', key)
    end
    return {}
end

local reply = {nowMs()}
for i = 1, #KEYS, 3 do
    local counter = false
    if redis.call('type', KEYS[i + 1])['ok'] == 'string' then
        counter = redis.call('get', KEYS[i + 1])
    end
    reply[#reply + 1] = {redis.call('type', KEYS[i])['ok'], redis.call('pttl', KEYS[i]), counter,
        hashOf(KEYS[i]), hashOf(KEYS[i + 2])}
end
return reply
