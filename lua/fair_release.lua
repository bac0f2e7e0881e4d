#!lua flags=allow-oom
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include hold.lua
--@include queue.lua
-- fair_release: release.lua for a fair lock. At 0 the lock is handed over
-- to the waiter longest in the queue (queue.lua), in the same call, rather
-- than freed for whoever asks first. A call of an owner that does not hold
-- the lock takes it out of the queue: so a waiter that gives up leaves,
-- and so does the release that takes back an acquire whose reply was lost.
--
-- KEYS[1..3], ARGV[1..6] and the reply ({NOT_HELD, 0}, {STILL_HELD,
-- count}, {FREED, 0}, {STALE, 0}) as release.lua, and
-- KEYS[4] fencing counter   P{N}:token, for the next holder's token
-- KEYS[5] queue             P{N}:queue
--
-- {FREED, 0}: released: the key is gone, or handed to the next waiter.
local hash, fences, queue, owner = KEYS[1], KEYS[3], KEYS[5], ARGV[1]
local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
local seqField = owner .. '#seq'

-- handOn hands the free lock over to the waiter longest in the queue, if
-- one lives. A counter that is not one leaves it free: the next acquire
-- reports that.
local function handOn()
    local now = nowMs()
    local first, after = head(queue, now)
    if first then
        handOver(hash, KEYS[4], queue, KEYS[2], ARGV[4], first, after, now)
    end
end

local held = redis.pcall('hmget', hash, owner, seqField)
if held.err or not held[1] then
    local queued = redis.pcall('hget', queue, owner .. '#seq')
    if type(queued) == 'string' then
        if tonumber(queued) >= seq or fencedUpTo(fences, owner, seq) then
            return {STALE, 0}
        end
        dequeue(queue, owner)
    end
    fence(fences, owner, superseded, ARGV[6])
    if not held.err and redis.call('exists', hash) == 0 then
        handOn()
    end
    return {NOT_HELD, 0}
end
local lowered = lower(held)
if lowered then
    return lowered
end
redis.call('del', hash)
handOn()
return {FREED, 0}
