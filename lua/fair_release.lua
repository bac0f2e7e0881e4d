#!lua flags=allow-oom
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include hold.lua
--@include queue.lua
--@include token.lua
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
-- ARGV[7] ignored           (release.lua's Client-leaves flag)
-- ARGV[8] heir G            a waiter of F's Client, to hand the lock to at
--                           0 if it is the queue's head, or absent
-- ARGV[9] G's seq           a number reserved for the hand-over before the
--                           request's first call: above G's calls before
-- ARGV[10] G's lease in ms
-- ARGV[11] '1' when the watchdog renews G's lease, '0' when it is fixed
--          (F#fix: hold.lua): G's own, which its queue entry's need not be
--          (the entry is its owner's, whose latest call wrote it)
--
-- A release to 0 that names G, when G is the live waiter longest in the
-- queue, grants it the lock in the same call and tells nobody: G holds one
-- level under a new token, its seq ARGV[9], the lease ARGV[10], and leaves
-- the queue, and the reply carries the token, which F's Client hands to G
-- (rlock/handoff.go). The queue's order is kept: G gets the lock only when
-- it is next anyway. And only when no later call of G fenced ARGV[9]: G's
-- Client gave the hand-over up for lost. A call that finds F holds nothing
-- but G holds the lock under ARGV[9] is a resend of one that handed it
-- over: it answers as that one.
--
-- {FREED, 0}: released: the key is gone, or handed to the next waiter.
-- {HANDED, token}: released and handed to G, which holds it under token.
local hash, fences, queue, owner, heir = KEYS[1], KEYS[3], KEYS[5], ARGV[1], ARGV[8]
local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
local seqField = owner .. '#seq'

-- handToHeir hands the free lock to G in the reply, when G heads the
-- queue (alive: its Client vouches for it, so its entry's own lease is not
-- read) and no later call of G fenced the hand-over; nil otherwise.
local function handToHeir()
    local q = redis.pcall('hmget', queue, '#head', heir .. '#next')
    if q.err or q[1] ~= heir or fencedUpTo(fences, heir, tonumber(ARGV[9])) then
        return nil
    end
    local token = giveTo(hash, KEYS[4], queue, KEYS[2], ARGV[4], heir, q[2], ARGV[9], ARGV[10], ARGV[11] ~= '0')
    return token and {HANDED, token}
end

-- handOnByMessage hands the free lock over to the waiter longest in the
-- queue, if one lives, by a message addressed to it. A counter that is not
-- one leaves it free: the next acquire reports that.
local function handOnByMessage()
    local now = nowMs()
    local first, e = head(queue, now)
    if first then
        handOver(hash, KEYS[4], queue, KEYS[2], ARGV[4], first, e, now)
    end
end

-- handOn is handOnByMessage for a release that freed the lock, but to G in
-- the reply when G is that waiter.
local function handOn()
    local handed = heir and handToHeir()
    if handed then
        return handed
    end
    handOnByMessage()
    return {FREED, 0}
end

local held = redis.pcall('hmget', hash, owner, seqField)
if held.err or not held[1] then
    local queued = redis.pcall('hget', queue, owner .. '#seq')
    if (type(queued) == 'string' and tonumber(queued) >= seq) or fencedUpTo(fences, owner, seq) then
        return {STALE, 0}
    end
    if type(queued) == 'string' then
        dequeue(queue, owner)
    end
    fence(fences, owner, superseded, ARGV[6])
    if heir and not held.err and redis.call('hget', hash, heir .. '#seq') == ARGV[9] then
        local token, err = currentToken(KEYS[4])
        return token and {HANDED, token} or err
    end
    if not held.err and redis.call('exists', hash) == 0 then
        -- A lock that is free with waiters queued (its holder's lease ran
        -- out, or a ForceUnlock) goes on by a message even to G: this call
        -- answers NOT_HELD, and G learns of nothing from it.
        handOnByMessage()
    end
    return {NOT_HELD, 0}
end
local lowered = lower(held)
if lowered then
    return lowered
end
redis.call('del', hash)
return handOn()
