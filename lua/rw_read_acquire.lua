#!lua
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include token.lua
--@include rw.lua
-- rw read acquire: take or re-enter a read hold of a read-write lock for
-- one owner, exactly once. KEYS, ARGV and the reply ({GRANTED, count,
-- token}, {REFUSED, pttl}, {STALE, 0}, {NOT_HELD, 0}) are acquire.lua's
-- (ARGV[1] is the owner's read field, B:r); see rw.lua for the hash.
--
-- Granted when no other owner holds the write lock and no writer waits, or
-- as a re-entry (a reader already holding never waits behind a writer: it
-- would deadlock), or to the write holder itself (downgrade), or to a
-- reader that a write release admitted (rw.lua's admit) ahead of the
-- writers waiting. A refused reader that waits (ARGV[7] '1') leaves a
-- mark, B:r#wait, and its reply's pttl is at most half the lease, as a
-- waiting writer's (see rw_write_acquire.lua). The token is the counter's
-- value: the token of the latest write hold before this one. Refused:
-- {REFUSED, pttl} with pttl the time until what refused it (the write hold's or
-- the waiting writers' own lease) ends, if nobody renews it.
local hash, owner, lease = KEYS[1], ARGV[1], tonumber(ARGV[4])
local writeField = string.sub(owner, 1, -3) .. ':w'
local now = nowMs()

local function take()
    local token, err = currentToken(KEYS[2])
    if not token then
        return err
    end
    redis.call('hincrby', hash, 'nr', 1)
    return grantNew(now, token)
end

local reply, held = acquiring(now, take, 'w', 'wait', owner .. '#admit')
if reply then
    return reply
end

-- refuse tells the caller to wait for pttl at most; a caller that waits
-- leaves a mark, which the next write release turns into an admission.
local function refuse(pttl)
    fence(KEYS[3], owner, tonumber(ARGV[5]), ARGV[6])
    redis.call('hset', hash, 'waiters', 1)
    if ARGV[7] == '1' then
        pttl = markWaiting(hash, owner, now, pttl, math.max(math.floor(lease / 2), 1))
    end
    return {REFUSED, pttl}
end

local writer = held[6]
if writer then
    local ends = tonumber(redis.call('hget', hash, writer .. '#exp') or '0')
    if ends <= now then
        dropHold(hash, writer)
        redis.call('hdel', hash, 'w')
        writer = nil
    elseif writer ~= writeField then
        return refuse(ends - now)
    end
end
local admitted = held[8] and tonumber(held[8]) > now
if not writer and not admitted and held[7] and tonumber(held[7]) > now then
    return refuse(tonumber(held[7]) - now)
end
return take()
