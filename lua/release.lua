#!lua flags=allow-oom
--@include codes.lua
--@include fence.lua
--@include hold.lua
--@include waiting.lua
--@include token.lua
-- release: set one owner's hold count lower, exactly once; at 0 the lock is
-- deleted and, if anyone waits, the unlock channel is told.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] unlock channel    P{N}:unlock
-- KEYS[3] fences            P{N}:fence
-- ARGV[1] owner field F     <clientID>:<ownerToken>
-- ARGV[2] seq               this call's sequence number (see acquire.lua)
-- ARGV[3] count             F's hold count after the call, >= 0: the
--                           client's confirmed count - 1 for an Unlock, or
--                           the confirmed count itself to take back what a
--                           call whose reply never came may have done
-- ARGV[4] publish command   'publish', or 'spublish' on a Cluster
-- ARGV[5] superseded        the highest seq of F whose reply never came, or 0
-- ARGV[6] fence life in ms
-- KEYS[5] waiting Clients    P{N}:queue (see waiting.lua)
-- ARGV[7] '1' when the owner's Client stops waiting (its last waiter gave
--         up): it leaves the waiting Clients, and if a release took it
--         out to wake it and the lock is free, the wake-up goes on as a
--         release's does (below); when the owner holds the lock (another
--         call of it took it), a release to the count it holds only takes
--         its Client out. Absent or '0' otherwise.
-- ARGV[8] heir G            a waiter of F's Client, to hand the lock to at
--                           0 (see below), or absent
-- ARGV[9] G's seq           a number reserved for the hand-over before the
--                           request's first call: above G's calls before
-- ARGV[10] G's lease in ms
-- ARGV[11] '1' when the watchdog renews G's lease, '0' when it is fixed
--          (F#fix: hold.lua)
-- KEYS[4] fencing counter   P{N}:token, for G's token
--
-- A release to 0 that names G hands the lock to G in the same call rather
-- than freeing it: G holds one level under a new token, its seq ARGV[9],
-- and the lease ARGV[10], and its Client leaves the waiting Clients, as a
-- waiter's that takes the lock does (acquire.lua). While another Client
-- is recorded as waiting (othersWaiting), a Client's waiters pass the lock
-- among themselves at most maxPasses times more: the release after that
-- frees it and wakes that Client. The lock's 'waiters' mark counts them:
-- it is 1 plus the hand-overs in a row that another Client waited
-- through; G's Client, which the first of them took out of the waiting
-- Clients, is recorded again, behind the Client woken. (A freed lock goes
-- to whoever asks first, the woken Client or not; a holder that took it
-- so begins a new count.) And G is handed the
-- lock only when no later call of G fenced ARGV[9]: G's Client gave the
-- hand-over up for lost. A call that finds F holds nothing but G holds the
-- lock under ARGV[9] is a resend of one that handed it over: it answers
-- as that one.
--
-- At 0, a marked lock (see acquire.lua) wakes one waiter: '@<clientID>'
-- on the inbox of the Client longest in the waiting Clients, or, when none is
-- recorded, 'unlocked', which every Client subscribed hands to one of its
-- waiters.
--
-- Reply: {NOT_HELD, 0}       F does not hold the lock (also when the key
--                           was overwritten by something that is not a lock)
--        {STILL_HELD, count} still held, count levels left
--        {FREED, 0}          released: the key is gone, and waiters were told
--        {STALE, 0}          a copy of a superseded call; nothing was done
--                           (F's fence covers ARGV[2] when F holds
--                           nothing, F#seq when it holds the lock)
--        {HANDED, token}     released and handed to G, which holds it under
--                           token
--
-- The lease is left as it is: a release never shortens what a live hold
-- relies on. allow-oom: releasing must work when Redis is at maxmemory.
local hash, fences, owner, heir = KEYS[1], KEYS[3], ARGV[1], ARGV[8]

-- maxPasses is how many hand-overs in a row within one Client another
-- Client waits through at most: a hand-over costs one round trip, a
-- wake-up in another Client two and a message, and the bound keeps that
-- Client's wait to a few holds.
local maxPasses = 8

-- handOver gives the lock, deleted, to G (see above), marked passed (the
-- 'waiters' count), and answers HANDED; nil when a counter that is not one
-- has no token for it. recorded says the waiting Clients hold someone, G's
-- Client perhaps.
local function handOver(recorded, passed)
    local token = nextToken(KEYS[4])
    if not token then
        return nil
    end
    redis.call('hset', hash, heir, 1, heir .. '#seq', ARGV[9], 'waiters', passed)
    markFixed(hash, heir, ARGV[11] ~= '0')
    redis.call('pexpire', hash, ARGV[10])
    if recorded then
        forgetWaiting(KEYS[5], heir)
    end
    return {HANDED, token}
end

local held = redis.pcall('hmget', hash, owner, owner .. '#seq', 'waiters')
if held.err or not held[1] then
    if fencedUpTo(fences, owner, tonumber(ARGV[2])) then
        return {STALE, 0} -- a late copy of a call a resend superseded
    end
    fence(fences, owner, tonumber(ARGV[5]), ARGV[6])
    if heir and not held.err and redis.call('hget', hash, heir .. '#seq') == ARGV[9] then
        local token, err = currentToken(KEYS[4])
        return token and {HANDED, token} or err
    end
    if ARGV[7] == '1' and unrecordWaiting(KEYS[5], owner) == 0 and not held.err and redis.call('exists', hash) == 0 then
        wakeNext(KEYS[5], KEYS[2], ARGV[4])
    end
    return {NOT_HELD, 0}
end
local lowered = lower(held)
if ARGV[7] == '1' and (not lowered or lowered[1] == STILL_HELD) then
    forgetWaiting(KEYS[5], owner)
end
if lowered then
    return lowered
end
redis.call('del', hash)
if heir and not fencedUpTo(fences, heir, tonumber(ARGV[9])) then
    local others, recorded = othersWaiting(KEYS[5], owner)
    local passed = others and tonumber(held[3] or '1') or 0
    if passed <= maxPasses then
        local handed = handOver(recorded, passed + 1)
        if handed then
            return handed
        end
    else
        -- The passes ran out: G's Client, which the first hand-over took
        -- out of the record, still waits, and goes back in, behind the
        -- Client woken now, whose own hand-overs it then bounds.
        recordWaiting(KEYS[5], heir, 0, ARGV[10])
    end
end
if held[3] then
    wakeNext(KEYS[5], KEYS[2], ARGV[4])
end
return {FREED, 0}
