-- waiting: a Mutex's waiting Clients (acquire.lua and release.lua), so
-- that a release wakes one waiter in the whole deployment rather than one
-- in every Client subscribed to the lock's channel.
--
-- The record, P{N}:queue for a Mutex, is a sorted set of Client ids, each
-- scored with the Redis time in µs at which one of its waiters was first
-- refused while subscribed to the channel: longest-waiting first. The
-- release that frees a lock someone waits for takes the Client longest in
-- it out and publishes '@<clientID>' (pubsub.Addressed), which that
-- Client's Subscriber turns into a wake-up of one of its waiters; the
-- other Clients ignore it. A Client that is not in the record, or a record
-- that is gone, costs a broadcast ('unlocked': one waiter in every Client)
-- rather than a lost wake-up, so the record is a saving, never a promise:
-- a key of the wrong type, or one that expired, only makes the release
-- wake every Client as before. The key expires a watchdog lease after the
-- holder's lease at the latest mark.

-- clientOf is the Client id of owner field f (<clientID>:<ownerToken>).
local function clientOf(f)
    return string.match(f, '^[^:]*')
end

-- recordWaiting records owner's Client in record as waiting, keeping its
-- place if it is there, for a hold that has pttl ms left (-1: none), and
-- lengthens the record's life to that plus lease ms.
local function recordWaiting(record, owner, pttl, lease)
    local now = redis.call('time')
    local us = string.format('%d', tonumber(now[1]) * 1000000 + tonumber(now[2]))
    if type(redis.pcall('zadd', record, 'nx', us, clientOf(owner))) ~= 'number' then
        return -- not a record: releases wake every Client
    end
    redis.call('pexpire', record, math.max(pttl, 0) + tonumber(lease))
end

-- unrecordWaiting takes owner's Client out of record, and returns 1 if it
-- was there, 0 if not (a release took it out to wake it, or it never
-- waited).
local function unrecordWaiting(record, owner)
    local n = redis.pcall('zrem', record, clientOf(owner))
    if type(n) ~= 'number' then
        return 1 -- not a record: there is nothing to pass on
    end
    return n
end

-- wakeNext takes the Client longest in record out of it and publishes
-- '@<clientID>' on channel with pub ('publish' or 'spublish'); it returns
-- false when record holds no Client (or is not a record).
local function wakeNext(record, channel, pub)
    local popped = redis.pcall('zpopmin', record)
    if type(popped) ~= 'table' or popped.err or not popped[1] then
        return false
    end
    redis.call(pub, channel, '@' .. popped[1])
    return true
end
