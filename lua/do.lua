#!lua
--@include codes.lua
--@include lease.lua
--@include fence.lua
-- do: run a holder's commands in the same script as the check that it
-- holds the lock (Mutex.Do), exactly once per request: no other client can
-- take the lock between the check and the commands.
--
-- KEYS[1] lock hash         P{N}: F -> count, F#seq, and F#exp for a hold
--                           with a lease of its own (a read-write lock's)
-- KEYS[2] fences            P{N}:fence
-- ARGV[1] owner field F     <clientID>:<ownerToken>, and the kind's suffix
-- ARGV[2] seq               this call's sequence number: above every earlier
--                           call of the same owner
-- ARGV[3] first             a number the Client reserved for the request
--                           just before its first call: every call of the
--                           request, resends and the settling call, carries
--                           it, so that the commands never run twice
-- ARGV[4] n                 the number of commands; 0 only to settle: fence
--                           the lost calls and tell whether one of them ran
-- ARGV[5] superseded        the highest seq of F whose reply never came, or 0
-- ARGV[6] fence life in ms
-- ARGV[7..] the commands, each as its number of words and then the words
--
-- (ARGV[2] and ARGV[5] sit where every request of the protocol has them.)
--
-- Reply: {RAN, results}    F holds the lock: the commands ran, in order;
--                          results has one entry per command, its reply or
--                          its error (redis.pcall), as MULTI/EXEC answers
--        {RAN_EARLIER, 0}  a call of this request whose reply was lost ran
--                          the commands already; they do not run again
--        {NOT_RUN, 0}      (settling) no call of the request ran, and none
--                          will: every one is fenced
--        {NOT_HELD, 0}     F does not hold the lock (never took it, its
--                          lease ran out, the key was deleted or is not a
--                          lock); nothing ran
--        {STALE, 0}        a copy of a call that a later call of the same
--                          owner superseded; nothing was done
--
-- The commands' own keys are not in KEYS: their words carry them. On a
-- Cluster the client checks that each is in the lock's slot, and Redis
-- fails a command of this script that touches another slot. F#seq is
-- written before the commands run, so a command that deletes the lock's
-- hash leaves nothing behind without an expiry.
local hash, fences, owner = KEYS[1], KEYS[2], ARGV[1]
local seq, first, n = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local seqField = owner .. '#seq'

local held = redis.pcall('hmget', hash, owner, seqField, owner .. '#exp')
if type(held) ~= 'table' or held.err or not held[1] or (held[3] and tonumber(held[3]) <= nowMs()) then
    fence(fences, owner, tonumber(ARGV[5]), ARGV[6])
    return {NOT_HELD, 0}
end
local last = tonumber(held[2] or '0')
local fenced = redis.pcall('hget', fences, owner)
if last >= seq or (type(fenced) == 'string' and tonumber(fenced) >= seq) then
    return {STALE, 0}
end
fence(fences, owner, tonumber(ARGV[5]), ARGV[6])
if last >= first then
    return {RAN_EARLIER, 0}
end
if n == 0 then
    return {NOT_RUN, 0}
end
redis.call('hset', hash, seqField, seq)
local results, at = {}, 7
for i = 1, n do
    local words = tonumber(ARGV[at])
    results[i] = redis.pcall(unpack(ARGV, at + 1, at + words))
    at = at + words + 1
end
return {RAN, results}
