#!lua
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
--
-- Reply: {1, count, token} acquired (count 1) or re-entered
--        {0, pttl}         another owner holds it (pttl -1: no expiry)
--
-- The field 'waiters' marks a lock whose release must publish: a refused
-- acquire sets it, and so does a waiter that takes the lock (others may
-- still wait behind it). An uncontended release publishes nothing.
--        {2, 0}            stale: a copy of a call that a later one of the
--                          same owner superseded; nothing was done
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

-- nextToken increments the fencing counter, starting it from the server
-- clock in microseconds when it is missing (first acquire, or Redis lost
-- it), so that tokens keep increasing across an empty restart.
local function nextToken()
    local t = redis.pcall('incr', KEYS[2])
    if type(t) == 'table' then
        return nil, t
    end
    if t == 1 then
        local now = redis.call('time')
        t = tonumber(now[1]) * 1000000 + tonumber(now[2])
        redis.call('set', KEYS[2], string.format('%d', t))
    end
    return t
end

local function take()
    local token, err = nextToken()
    if not token then
        return err
    end
    if ARGV[7] == '1' then
        redis.call('hset', hash, owner, 1, seqField, seq, 'waiters', 1)
    else
        redis.call('hset', hash, owner, 1, seqField, seq)
    end
    redis.call('pexpire', hash, ARGV[4])
    fence(fences, owner, superseded, ARGV[6])
    return {1, 1, token}
end

-- Fast path: no lock and no fences at all.
if redis.call('exists', hash, fences) == 0 then
    return take()
end

local htype, ftype = redis.call('type', hash).ok, redis.call('type', fences).ok
if (htype ~= 'hash' and htype ~= 'none') or (ftype ~= 'hash' and ftype ~= 'none') then
    return redis.error_reply('WRONGTYPE lock key ' .. hash .. ' or ' .. fences .. ' is not a hash')
end
local held = redis.call('hmget', hash, owner, seqField)
if held[1] then
    if tonumber(held[2]) >= seq then
        return {2, 0}
    end
    local token = tonumber(redis.call('get', KEYS[2]) or '0')
    redis.call('hset', hash, owner, ARGV[3], seqField, seq)
    if redis.call('pexpire', hash, ARGV[4], 'gt') == 0 and redis.call('pttl', hash) == -1 then
        redis.call('pexpire', hash, ARGV[4]) -- made persistent by hand: lease it again
    end
    fence(fences, owner, superseded, ARGV[6])
    return {1, tonumber(ARGV[3]), token}
end
if tonumber(redis.call('hget', fences, owner) or '0') >= seq then
    return {2, 0}
end
if htype == 'hash' then
    fence(fences, owner, superseded, ARGV[6])
    redis.call('hset', hash, 'waiters', 1)
    return {0, redis.call('pttl', hash)}
end
return take()
