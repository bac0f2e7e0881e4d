#!lua
-- acquire: take or re-enter a reentrant lock.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] fencing counter   P{N}:token
-- KEYS[3] request latch     P{N}:latch:<requestID>
-- ARGV[1] owner field       <clientID>:<ownerToken>
-- ARGV[2] lease in ms
-- ARGV[3] latch lifetime in ms
--
-- Reply: {1, holdCount, fencingToken} when acquired or re-entered,
--        {0, pttl} when another owner holds the lock (pttl in ms, -1 if the
--        holder's key has no expiry).
--
-- Tokens increase by one per first acquire, from a start taken from the
-- server clock whenever the counter is missing, so they keep increasing
-- across a restart that lost the counter (unless the clock went back).
--
-- A repeated request (same latch) returns the first reply without counting
-- twice, so a client may resend it when the first reply was lost. The script
-- carries no allow-oom flag: at maxmemory Redis refuses it before it runs.
local latched = redis.call('get', KEYS[3])
if latched then
    return cjson.decode(latched)
end
if redis.call('exists', KEYS[1]) == 1 and redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return {0, redis.call('pttl', KEYS[1])}
end
local count = redis.call('hincrby', KEYS[1], ARGV[1], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
local token
if count == 1 then
    if redis.call('exists', KEYS[2]) == 0 then
        -- No counter: the lock's first acquire, or Redis lost the counter
        -- (restarted empty, flushed, evicted). Start it at the server clock
        -- in microseconds, above every token handed out before, so that a
        -- fenced store keeps accepting the new holders and refusing the old.
        local now = redis.call('time')
        redis.call('set', KEYS[2], now[1] .. string.format('%06d', tonumber(now[2])))
    end
    token = redis.call('incr', KEYS[2])
else
    token = tonumber(redis.call('get', KEYS[2]) or '0')
end
-- The latch is written by hand: cjson.encode keeps 14 significant digits,
-- and a token started from the clock has 16.
redis.call('set', KEYS[3], string.format('[1,%d,%d]', count, token), 'px', ARGV[3])
return {1, count, token}
