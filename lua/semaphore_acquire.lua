#!lua
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include holders.lua
--@include hold.lua
-- semaphore_acquire: take one more permit of a semaphore for one owner,
-- exactly once. It takes acquire.lua's KEYS, ARGV and replies, so rlock's
-- request engine (sequence numbers, fences, settling, renewal) serves
-- permits as it serves locks; only KEYS[2] and the token differ.
--
-- KEYS[1] holders hash      P{N}:semaphore (see holders.lua)
-- KEYS[2] permits           P{N}:semaphore:permits: the number of permits
-- KEYS[3] fences            P{N}:semaphore:fence
-- ARGV[1] owner field F     <clientID>:<ownerToken>
-- ARGV[2] seq               this call's sequence number (see acquire.lua)
-- ARGV[3] count             F's permits after the call when F holds some
--                           (the client's confirmed count + 1)
-- ARGV[4] lease in ms       F's own lease (F#exp), and the hash's
-- ARGV[5] superseded        the highest seq of F whose reply never came, or 0
-- ARGV[6] fence life in ms
-- ARGV[7] '1' when the caller waits on the channel, else '0'
-- KEYS[5] channel           P{N}:semaphore:unlock
-- ARGV[8] publish command   'publish', or 'spublish' on a Cluster
-- ARGV[10] '1' when the watchdog renews F's lease, '0' for a fixed one:
--         F's first permit marks a fixed lease, and a later grant marks
--         it anew (F#fix: hold.lua's markFixed and remark)
-- KEYS[4] and ARGV[9], which every kind is sent (lua/doc.go), are not
-- read here.
--
-- Reply: {GRANTED, count, 0}  F holds count permits (no fencing token)
--        {REFUSED, pttl}      no permit free: pttl is the time until the
--                             earliest holder's lease ends, -1 when nobody
--                             holds one (permits are 0 or fewer); the
--                             refusal marks the hash so that a release
--                             publishes
--        {STALE, 0}           a superseded copy; nothing was done
--
-- Holders whose own lease passed are dropped first: their permits are
-- free. A call that asks for no more than F holds (a resend whose lost
-- call applied) is granted even when permits were taken away meanwhile:
-- refusing it would leave F holding what its caller thinks it lacks. A
-- grant only lengthens F#exp and the hash's lease (PEXPIRE GT), so the
-- hash outlives every live holder. No allow-oom, as acquire.lua.
--
-- A grant can give permits back: the expired holders' dropped on the way,
-- and F's own when a new hold of F asks for fewer than an ended one left
-- (its Release failed: the count sent starts again at 1). When more came
-- back than F took and someone waits, the channel is told as a release
-- tells it: no release will, and a waiter would otherwise sleep until the
-- earliest holder's lease ends.
local hash, permits, fences, owner = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
local seqField, expField = owner .. '#seq', owner .. '#exp'

local htype, ptype, ftype = redis.call('type', hash).ok, redis.call('type', permits).ok, redis.call('type', fences).ok
if (htype ~= 'hash' and htype ~= 'none') or (ptype ~= 'string' and ptype ~= 'none')
    or (ftype ~= 'hash' and ftype ~= 'none') then
    return redis.error_reply('WRONGTYPE semaphore key ' .. hash .. ', ' .. permits .. ' or ' .. fences .. ' has the wrong type')
end
-- The permits are read before anything is written: a count that is not a
-- number fails the call having changed nothing.
local total = tonumber(redis.call('get', permits) or '0')
if not total then
    return redis.error_reply('ERR semaphore permits ' .. permits .. ' is not a number')
end
local now = nowMs()
local live, earliest, expired, fields = holders(hash, now, true)
local held = {fields[owner], fields[seqField], fields[expField]}
if held[1] and tonumber(held[2]) >= seq then
    return {STALE, 0}
end
if tonumber(redis.call('hget', fences, owner) or '0') >= seq then
    return {STALE, 0}
end
fence(fences, owner, superseded, ARGV[6])

local count, mine = 1, 0
if held[1] then
    count, mine = tonumber(ARGV[3]), tonumber(held[1])
end
if count > mine and live - mine + count > total then
    if redis.call('exists', hash) == 1 then
        redis.call('hset', hash, 'waiters', 1)
    end
    if earliest then
        return {REFUSED, earliest - now}
    end
    return {REFUSED, -1}
end
local lease = tonumber(ARGV[4])
local ends = now + lease
if held[3] and tonumber(held[3]) > ends then
    ends = tonumber(held[3])
end
redis.call('hset', hash, owner, count, seqField, seq, expField, ends)
if not held[1] then
    markFixed(hash, owner, ARGV[10] == '1')
else
    remark(hash, owner, fields[owner .. '#fix'], ARGV[3])
end
if ARGV[7] == '1' then
    redis.call('hset', hash, 'waiters', 1)
end
lengthen(hash, lease)
permitsBack(hash, live - mine + count, expired + mine - count, fields.waiters, ARGV[8], KEYS[5])
return {GRANTED, count, 0}
