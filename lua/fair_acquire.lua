#!lua
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include hold.lua
--@include queue.lua
--@include token.lua
-- fair_acquire: acquire.lua for a fair lock: owners get the lock in the
-- order in which they queued; a re-entry never queues.
--
-- KEYS[1..3], ARGV[1..7] and the reply ({GRANTED, count, token},
-- {REFUSED, pttl}, {STALE, 0}, {NOT_HELD, 0}) as acquire.lua, and
-- KEYS[4] queue             P{N}:queue (see queue.lua)
-- KEYS[5] unlock channel    P{N}:unlock, for the hand-over message
-- ARGV[7] '1' when the caller waits: a refused call queues it, or keeps
--         its place and renews its entry's own lease
-- ARGV[8] publish command   'publish', or 'spublish' on a Cluster
-- ARGV[9] an entry's own lease in ms: the watchdog's, which renews it
-- ARGV[10] '1' when ARGV[4] is the watchdog's lease: a lock handed over
--         lasts what is left of the entry's own lease; else ARGV[4], and
--         the hold is marked fixed (F#fix: hold.lua)
--
-- A free lock goes to the caller only when nobody lives in the queue ahead
-- of it. Otherwise it goes to the waiter longest in the queue, handed over
-- (queue.lua) as a release does, and the caller is refused with the new
-- holder's pttl: a lock that expired is handed on by the first call that
-- finds it so. A waiter behind another is refused with no more than what
-- is left of the head's own lease: a head that died is handed the lock
-- for no longer, and the lock's expiry publishes nothing, so the waiter
-- must ask by then (the head's successor, told when the lock runs out,
-- may be dead too). The entry records when the waiter asks again at the
-- latest (W#wake: the refusal's time plus its pttl), so that a hand-over
-- tells it of the new holder's lease only when it would ask later.
local hash, fences, queue, owner = KEYS[1], KEYS[3], KEYS[4], ARGV[1]
local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
local seqField = owner .. '#seq'

-- Fast path: no lock, no fences, nobody queued.
-- EXISTS counts a key once per time it is named: found is hash + 2 *
-- fences + 4 * queue, so found % 4 >= 2 says the fences exist.
local found = redis.call('exists', hash, fences, fences, queue, queue, queue, queue)
if found == 0 then
    return gone() or take(false)
end

local held = redis.pcall('hmget', hash, owner, seqField, owner .. '#fix')
-- entry[4] and entry[5] are the queue's head and last waiter, as long as
-- this call has not moved them: a call that does sets ends to false.
local entry = redis.pcall('hmget', queue, owner .. '#seq', owner .. '#exp', owner .. '#wake', '#head', '#last')
local ends = true
local f = false -- no fences: the owner's entry is absent
if found % 4 >= 2 then
    f = redis.pcall('hget', fences, owner)
end
if held.err or entry.err or type(f) == 'table' then
    return redis.error_reply('WRONGTYPE lock key ' .. hash .. ', ' .. fences .. ' or ' .. queue .. ' is not a hash')
end
if held[1] then
    return reenter(held, held[3])
end
if tonumber(f or '0') >= seq or tonumber(entry[1] or '0') >= seq then
    return {STALE, 0}
end
local pttl = redis.call('pttl', hash)
if pttl == -2 then
    local lost = gone() -- the next call, at one level, hands it on
    if lost then
        return lost
    end
    -- The free lock goes to someone, who needs a token: a counter that is
    -- not one fails the call before anything is written.
    local counter, err = readCounter(KEYS[2])
    if counter == nil then
        return err
    end
end
fence(fences, owner, superseded, ARGV[6])
local now = nowMs()
if entry[1] and tonumber(entry[2]) <= now then
    dequeue(queue, owner) -- its own lease passed: it starts again at the back
    entry[1], ends = false, false
end
if pttl == -2 then
    local first, e = head(queue, now)
    if not first or first == owner then
        if first then
            dequeue(queue, owner)
        end
        return take(false)
    end
    local err = handOver(hash, KEYS[2], queue, KEYS[5], ARGV[8], first, e, now)
    if err then
        return err
    end
    pttl, ends = redis.call('pttl', hash), false
end
if ARGV[7] == '1' then
    local grant = ARGV[4]
    if ARGV[10] == '1' then
        grant = '0'
    end
    if not ends then
        entry[4], entry[5] = unpack(redis.call('hmget', queue, '#head', '#last'))
    end
    pttl = untilHeadLapses(queue, owner, entry[4], pttl, now)
    local exp, wake = now + tonumber(ARGV[9]), 0
    if pttl > 0 then
        wake = now + pttl
    end
    if entry[1] then
        wake = laterWake(entry[3], wake)
        redis.call('hset', queue, owner .. '#exp', exp, owner .. '#seq', seq, owner .. '#lease', grant, owner .. '#wake', wake)
    else
        enqueue(queue, owner, entry[5], owner .. '#exp', exp, owner .. '#seq', seq, owner .. '#lease', grant, owner .. '#wake', wake)
    end
    lengthen(queue, ARGV[9])
end
return {REFUSED, pttl}
