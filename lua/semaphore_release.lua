#!lua flags=allow-oom
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include holders.lua
--@include hold.lua
-- semaphore_release: set the permits one owner holds lower, exactly once,
-- and tell waiters when permits came back. It takes release.lua's KEYS,
-- ARGV and replies.
--
-- KEYS[1] holders hash      P{N}:semaphore (see holders.lua)
-- KEYS[2] channel           P{N}:semaphore:unlock
-- KEYS[3] fences            P{N}:semaphore:fence
-- ARGV[1] owner field F     <clientID>:<ownerToken>
-- ARGV[2] seq               this call's sequence number (see acquire.lua)
-- ARGV[3] count             F's permits after the call, >= 0 (the
--                           confirmed count - 1 for a Release, or the
--                           confirmed count to settle a lost acquire);
--                           never more than F holds: a release only
--                           lowers
-- ARGV[4] publish command   'publish', or 'spublish' on a Cluster
-- ARGV[5] superseded        the highest seq of F whose reply never came, or 0
-- ARGV[6] fence life in ms
--
-- Reply: {NOT_HELD, 0}        F holds no permit (also when its lease
--                            passed, or the key is not a semaphore)
--        {STILL_HELD, count}  F still holds count permits
--        {FREED, 0}           F holds no permit any more
--        {STALE, 0}           a superseded copy; nothing was done
--
-- When permits came back (this owner's, or expired holders' dropped on the
-- way) and someone waits, the channel is told: 'unlocked' wakes one waiter
-- for one permit, 'all' wakes every waiter for more. The hash goes when no
-- holder is left. allow-oom: releasing must work at maxmemory.
local hash, fences, owner = KEYS[1], KEYS[3], ARGV[1]
local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
local seqField = owner .. '#seq'

if redis.call('type', hash).ok ~= 'hash' then
    fence(fences, owner, superseded, ARGV[6])
    return {NOT_HELD, 0}
end
local live, _, freed, fields = holders(hash, nowMs(), true)
local held = {fields[owner], fields[seqField], fields.waiters}
local reply = {NOT_HELD, 0}
if held[1] then
    if tonumber(held[2]) >= seq then
        return {STALE, 0}
    end
    local left = math.min(tonumber(ARGV[3]), tonumber(held[1])) -- never raised (hold.lua's lower)
    freed = freed + math.max(tonumber(held[1]) - left, 0)
    live = live - tonumber(held[1]) + left
    if left > 0 then
        redis.call('hset', hash, owner, left, seqField, seq)
        reply = {STILL_HELD, left}
    else
        dropFields(hash, owner)
        reply = {FREED, 0}
    end
end
fence(fences, owner, superseded, ARGV[6])
permitsBack(hash, live, freed, held[3], ARGV[4], KEYS[2])
return reply
