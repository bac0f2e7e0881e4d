#!lua
--@include codes.lua
--@include fence.lua
--@include hold.lua
--@include waiting.lua
-- acquire: take or re-enter a reentrant lock for one owner, exactly once.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] fencing counter   P{N}:token
-- KEYS[3] fences            P{N}:fence
-- ARGV[1] owner field F     <clientID>:<ownerToken>
-- ARGV[2] seq               this call's sequence number: above every earlier
--                           call of the same owner
-- ARGV[3] count             F's hold count after a re-entry (the client's
--                           confirmed count + 1)
-- ARGV[4] lease in ms
-- ARGV[5] superseded        the highest seq of F whose reply never came
--                           (a copy may still arrive), or 0
-- ARGV[6] fence life in ms
-- ARGV[7] '1' when the caller waits on the unlock channel, else '0'
-- KEYS[4] waiting Clients    P{N}:queue (see waiting.lua)
-- ARGV[9] the watchdog's lease in ms: how long a waiting Client's mark
--         outlives the holder's lease
-- ARGV[10] '1' when the watchdog renews the hold, '0' for a fixed lease
--         (F#fix: hold.lua)
-- KEYS[5] and ARGV[8], which every kind is sent (lua/doc.go), are the
-- fair lock's: not read here.
--
-- Reply: {GRANTED, count, token}  acquired (count 1) or re-entered
--        {REFUSED, pttl}         another owner holds it (pttl -1: no expiry)
--        {STALE, 0}              a copy of a call that a later one of the
--                                same owner superseded; nothing was done
--        {NOT_HELD, 0}           a re-entry (count above 1) of a hold that
--                                Redis lost; nothing was taken (hold.lua)
--
-- The field 'waiters' marks a lock whose release must publish: a refused
-- acquire sets it, and so does a waiter that takes the lock (others may
-- still wait behind it), and so does an owner that takes it while Clients
-- are recorded as waiting (its value counts hand-overs: release.lua). An
-- uncontended release publishes nothing. A refused caller that waits also
-- records its Client as waiting (KEYS[4]), and a waiter that takes the
-- lock takes its Client out, so that a release wakes one Client, not all
-- of them (waiting.lua).
--
-- The hash holds, for its one owner, F -> count and F#seq -> the seq of the
-- owner's latest call that applied. A call applies only when its seq is
-- above that and above the owner's entry in the fences hash, which a
-- superseding call writes: so a resend is a new call that fences the copies
-- before it, and a copy that arrives late is refused. Nothing is written per
-- call besides the lock itself; fences only after a reply was lost.
--
-- Counts are absolute: the client serialises the calls of one owner on one
-- lock and knows its count. A re-entry only lengthens the lease (PEXPIRE
-- GT). Key types are checked before anything is written. No allow-oom: at
-- maxmemory Redis refuses a new acquire before it runs.
local hash, fences, owner = KEYS[1], KEYS[3], ARGV[1]
local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
local seqField = owner .. '#seq'

-- takeMarked takes the free lock marked, for a caller whose release must
-- wake the Clients recorded as waiting; a waiter's Client leaves the
-- record once it holds the lock (after take, which fails before it writes
-- when the fencing counter is not one).
local function takeMarked()
    local granted = take(true)
    if ARGV[7] == '1' and not granted.err then
        forgetWaiting(KEYS[4], owner)
    end
    return granted
end

-- Fast path: no lock, no fences and no waiting Client at all. EXISTS
-- counts a key once per time it is named: found is hash + 2 * fences +
-- 4 * record, so 4 means the record alone, and found % 4 >= 2 that the
-- fences exist.
local found = redis.call('exists', hash, fences, fences, KEYS[4], KEYS[4], KEYS[4], KEYS[4])
if found == 0 then
    return gone() or take(ARGV[7] == '1')
end
-- A free lock, no fences, and Clients waiting: the lock is marked, so that
-- its release wakes one of them; a waiter's Client leaves the record.
if found == 4 then
    return gone() or takeMarked()
end

local held = redis.pcall('hmget', hash, owner, seqField, 'waiters', owner .. '#fix')
local f = false -- no fences: the owner's entry is absent
if found % 4 >= 2 then
    f = redis.pcall('hget', fences, owner)
end
if held.err or type(f) == 'table' then
    return redis.error_reply('WRONGTYPE lock key ' .. hash .. ' or ' .. fences .. ' is not a hash')
end
if held[1] then
    -- A waiter whose owner took the lock meanwhile re-enters: its Client
    -- holds the lock, and leaves the record as a waiter's that takes it.
    local granted = reenter(held, held[4])
    if ARGV[7] == '1' and granted[1] == GRANTED then
        forgetWaiting(KEYS[4], owner)
    end
    return granted
end
if tonumber(f or '0') >= seq then
    return {STALE, 0}
end
local pttl = redis.call('pttl', hash)
if pttl ~= -2 then
    fence(fences, owner, superseded, ARGV[6])
    if not held[3] then
        redis.call('hset', hash, 'waiters', 1)
    end
    if ARGV[7] == '1' then
        recordWaiting(KEYS[4], owner, pttl, ARGV[9])
    end
    return {REFUSED, pttl}
end
if ARGV[7] == '1' then
    return gone() or takeMarked()
end
return gone() or take(redis.call('exists', KEYS[4]) == 1)
