#!lua flags=allow-oom
--@include codes.lua
--@include fence.lua
-- latch_countdown: count a count-down latch down by one, exactly once per
-- request; at 0 every waiter is told.
--
-- KEYS[1] latch hash        P{N}:latch: 'count'; 'gen', which names the
--                           setting of the count (latch_set.lua); C#seq ->
--                           the seq of Client C's latest call that
--                           counted; 'life', the longest fence life of the
--                           Clients that counted
-- KEYS[2] channel           P{N}:latch:unlock
-- KEYS[3] fences            P{N}:latch:fence
-- ARGV[1] Client id C
-- ARGV[2] seq               this call's sequence number: above every earlier
--                           call of C (C's calls on one latch take turns)
-- ARGV[3] first             a number the Client reserved for the request
--                           just before its first call: every call of the
--                           request, resends and the settling call, carries
--                           it, so that the request does not count twice
-- ARGV[4] '1' to count down, '0' only to settle: fence the lost calls and
--         tell whether one of them counted
-- ARGV[5] superseded        the highest seq of C whose reply never came, or 0
-- ARGV[6] fence life in ms
-- ARGV[7] publish command   'publish', or 'spublish' on a Cluster
--
-- (ARGV[2] and ARGV[5] sit where every request of the protocol has them.)
--
-- Reply: {COUNTED, count}      the request counted (this call, or an earlier
--                             call of it whose reply was lost); count is
--                             what is left
--        {NOT_COUNTED, count}  nothing counted: the latch was at 0 or unset,
--                             or (to settle) no call of the request counted
--        {STALE, 0}            a superseded copy; nothing was done
--
-- At 0 the hash keeps count 0, and the Clients' C#seq, for the longest
-- fence life of the Clients that counted ('life'), so that a request whose
-- reply was lost can still be told and never counts again, even one of a
-- Client whose fence life is longer than that of the Client that counted
-- last; then it expires: a latch at 0 and an unset latch are the same to
-- every other script. allow-oom: a CountDown only lowers a count, and at
-- maxmemory the Awaits still wake.
local hash, fences, client = KEYS[1], KEYS[3], ARGV[1]
local seq, first, superseded = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
local seqField = client .. '#seq'

local _, wrong = hashTypes('latch', hash, fences)
if wrong then
    return wrong
end
local state = redis.call('hmget', hash, 'count', seqField, 'life')
local count, last = tonumber(state[1] or '0'), tonumber(state[2] or '0')
local life = math.max(tonumber(state[3] or '0'), tonumber(ARGV[6]))
if staleCall(fences, client, last, seq) then
    return {STALE, 0}
end
fence(fences, client, superseded, ARGV[6])
if last >= first then
    return {COUNTED, count}
end
if ARGV[4] ~= '1' or count <= 0 then
    return {NOT_COUNTED, count}
end
count = count - 1
redis.call('hset', hash, 'count', count, seqField, seq, 'life', life)
if count == 0 then
    redis.call('pexpire', hash, life)
    redis.call(ARGV[7], KEYS[2], 'all')
end
return {COUNTED, count}
