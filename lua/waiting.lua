--@include client.lua
-- waiting: a Mutex's waiting Clients (acquire.lua and release.lua), so
-- that a release wakes one waiter in the whole deployment rather than one
-- in every Client subscribed to the lock's channel.
--
-- The record, P{N}:queue for a Mutex, is a sorted set of Client ids, each
-- scored with the Redis time in µs at which one of its waiters was first
-- refused while subscribed to the channel: longest-waiting first. The
-- release that frees a lock someone waits for takes the Client longest in
-- it out and publishes '@<clientID>' (pubsub.Addressed) on that Client's
-- inbox (client.lua), where only it listens and whose Subscriber turns it
-- into a wake-up of one of its waiters. A Client that is not in the record,
-- or a record that is gone, costs a broadcast ('unlocked': one waiter in
-- every Client) rather than a lost wake-up, so the record is a saving,
-- never a promise: a key of the wrong type, or one that expired, only makes
-- the release wake every Client as before. A woken Client keeps its place
-- as a mark (its score raised by woken): if its waiter loses the freed lock
-- to an owner passing by, its refusal puts it back where it was, ahead of
-- the Clients that came after it, rather than last. The key expires a
-- watchdog lease after the holder's lease at a refusal, the latest such
-- end.

-- woken is what a woken Client's mark adds to its score: a mark sorts
-- after every Client still to be woken, and keeps the place C had. 2^52
-- µs: Redis times stay exact doubles beside it.
local woken = 4503599627370496

-- recordWaiting records owner's Client in record as waiting, keeping its
-- place if it is there, or getting back the place it had when a release
-- woke it (its mark) and it lost the lock to another owner; for a hold
-- that has pttl ms left (-1: none), and lengthens the record's life to
-- that plus lease ms, if it was shorter.
local function recordWaiting(record, owner, pttl, lease)
    local c = clientOf(owner)
    local place = redis.pcall('zscore', record, c)
    if type(place) == 'table' then
        return -- not a record: releases wake every Client
    end
    if not place then
        local now = redis.call('time')
        redis.call('zadd', record, string.format('%d', tonumber(now[1]) * 1000000 + tonumber(now[2])), c)
    elseif tonumber(place) >= woken then
        redis.call('zadd', record, tonumber(place) - woken, c)
    end
    local life = math.max(pttl, 0) + tonumber(lease)
    if redis.call('pttl', record) < life then
        redis.call('pexpire', record, life)
    end
end

-- forgetWaiting takes owner's Client out of record, or its mark: for a
-- waiter that takes the lock.
local function forgetWaiting(record, owner)
    redis.pcall('zrem', record, clientOf(owner))
end

-- unrecordWaiting takes owner's Client out of record, or its mark, and
-- returns 1 if it was there to be woken, 0 if not (a release woke it, or
-- it never waited).
local function unrecordWaiting(record, owner)
    local c = clientOf(owner)
    local place = redis.pcall('zscore', record, c)
    if type(place) == 'table' then
        return 1 -- not a record: there is nothing to pass on
    end
    if not place then
        return 0
    end
    redis.call('zrem', record, c)
    return tonumber(place) < woken and 1 or 0
end

-- othersWaiting reports whether a Client other than owner's waits to be
-- woken in record: the two Clients longest in it are enough to tell, as
-- marks sort after every Client still to be woken. A record that is not
-- one says no. Its second result is false when record holds nobody at
-- all, so that there is nobody to take out of it either.
local function othersWaiting(record, owner)
    local c = clientOf(owner)
    local first = redis.pcall('zrange', record, 0, 1, 'withscores')
    if type(first) ~= 'table' or first.err then
        return false, false
    end
    for i = 1, #first, 2 do
        if first[i] ~= c and tonumber(first[i + 1]) < woken then
            return true, true
        end
    end
    return false, first[1] ~= nil
end

-- wakeNext wakes one waiter on channel, publishing with pub ('publish' or
-- 'spublish'): it marks the Client longest in record as woken (its score
-- raised by woken, in place) and publishes '@<clientID>' on its inbox
-- (client.lua); when record holds no Client to wake (or is not a record),
-- it publishes 'unlocked' on channel, which every Client subscribed hands
-- to one of its waiters: a Client leaves the record when one of its
-- waiters takes the lock, though others of its waiters may still sleep. A
-- Client that died is woken once: its mark is never woken again, and goes
-- with the record.
local function wakeNext(record, channel, pub)
    local first = redis.pcall('zrange', record, 0, 0, 'withscores')
    if type(first) ~= 'table' or first.err or not first[1] or tonumber(first[2]) >= woken then
        redis.call(pub, channel, 'unlocked')
        return
    end
    redis.call('zincrby', record, woken, first[1])
    redis.call(pub, inboxOf(channel, first[1]), '@' .. first[1])
end
