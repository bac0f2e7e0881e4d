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
-- ARGV[1]   'numsub', or 'shardnumsub' on a Cluster: how to count a
--           channel's subscribers
-- ARGV[1+j] the unlock channel of the j-th lock
--
-- Reply (values, not codes): {now, lock, lock, ...}, a lock per three keys:
--   now     Redis time in ms: what own leases (F#exp) are measured against
--   lock    {type, pttl, counter, fields, queue, subscribers}:
--     type     the Redis type of the hash: 'hash', 'none' when it is absent
--     pttl     PTTL of the hash: -2 absent, -1 no expiry
--     counter  the counter's value as a string; false if none (or the key
--              is not a string)
--     fields   HGETALL of the hash as {field, value, ...}; empty unless a
--              hash
--     queue    HGETALL of the queue, the same way
--     subscribers  the subscriptions to the lock's channel (PUBSUB
--              NUMSUB or SHARDNUMSUB: counting them subscribes to nothing)
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
    local channel = ARGV[2 + (i - 1) / 3]
    local subscribers = redis.call('pubsub', ARGV[1], channel)[2]
    reply[#reply + 1] = {redis.call('type', KEYS[i])['ok'], redis.call('pttl', KEYS[i]), counter,
        hashOf(KEYS[i]), hashOf(KEYS[i + 2]), subscribers}
end
return reply
