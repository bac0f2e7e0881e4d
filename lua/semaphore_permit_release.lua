#!lua flags=allow-oom
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include holders.lua
--@include hold.lua
-- semaphore_permit_release: give back a travelling permit of a semaphore
-- by its id, from any Client, exactly once per request. It takes
-- release.lua's KEYS and ARGV layout; the releaser is a Client, not an
-- owner: a permit that travels is nobody's, and the Client that gives it
-- back is often not the one that took it.
--
-- KEYS[1] holders hash      P{N}:semaphore (see holders.lua): the permit is
--                           the holder P = 'permit:<id>', with P -> 1,
--                           P#seq (its acquire's) and P#exp
-- KEYS[2] channel           P{N}:semaphore:unlock
-- KEYS[3] fences            P{N}:semaphore:fence: also C#seq -> the seq of
--                           Client C's latest call that gave a permit back
-- ARGV[1] Client id C       the releaser
-- ARGV[2] seq               this call's sequence number: above every earlier
--                           call of C (C's permit releases on one semaphore
--                           take turns)
-- ARGV[3] first             a number C reserved for the request just before
--                           its first call: every call of the request,
--                           resends too, carries it, so that a resend of a
--                           release that applied answers as the first call
--                           did (see latch_countdown.lua)
-- ARGV[4] publish command   'publish', or 'spublish' on a Cluster
-- ARGV[5] superseded        the highest seq of C whose reply never came, or 0
-- ARGV[6] fence life in ms
-- ARGV[7] permit field P    'permit:<id>'
--
-- Reply: {FREED, 0}     the request gave the permit back (this call, or an
--                       earlier call of it whose reply was lost)
--        {NOT_HELD, 0}  no live permit has that id: never taken, expired,
--                       or given back by another request; nothing freed
--        {STALE, 0}     a superseded copy; nothing was done
--
-- A permit's own P#seq is its acquiring Client's number, which says
-- nothing about C's: a release never reads it. A copy of a call of the
-- request that arrives after it finds C#seq at or above its seq (STALE),
-- or the permit gone (NOT_HELD): either way it frees nothing. C#seq costs
-- one field per releasing Client, not one per permit, and goes with the
-- fences. allow-oom: releasing must work at maxmemory.
local hash, fences, client, permit = KEYS[1], KEYS[3], ARGV[1], ARGV[7]
local seq, first, superseded = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
local seqField = client .. '#seq'

local htype, wrong = hashTypes('semaphore', hash, fences)
if wrong then
    return wrong
end
local last = tonumber(redis.call('hget', fences, seqField) or '0')
if staleCall(fences, client, last, seq) then
    return {STALE, 0}
end
fence(fences, client, superseded, ARGV[6])
if last >= first then
    return {FREED, 0}
end
if htype ~= 'hash' then
    return {NOT_HELD, 0}
end
local live, _, freed, fields = holders(hash, nowMs(), true)
local reply = {NOT_HELD, 0}
if fields[permit] then
    local n = tonumber(fields[permit])
    dropFields(hash, permit)
    live, freed = live - n, freed + n
    fence(fences, seqField, seq, ARGV[6])
    reply = {FREED, 0}
end
permitsBack(hash, live, freed, fields.waiters, ARGV[4], KEYS[2])
return reply
