#!lua
--@include once.lua
-- semaphore_permits: set or change the number of permits of a semaphore.
--
-- KEYS[1] permits           P{N}:semaphore:permits
-- KEYS[2] channel           P{N}:semaphore:unlock
-- KEYS[3] the call's answer key (once.lua)
-- ARGV[1] 'set': set the permits to n when they were never set
--         'add': add n, which may be negative
-- ARGV[2] n
-- ARGV[3] publish command   'publish', or 'spublish' on a Cluster
-- ARGV[4] the largest count, either way from 0, that Lua's numbers (doubles)
--         hold exactly: 2^53; acquire reads the permits as one
-- ARGV[5] fence life in ms (once.lua)
--
-- Reply (a number, not a code): set: 1 when it set them, 0 when they
--        were set already; add: the permits after the call, or nil (and
--        nothing done) when they would leave that range; false too
--        for a call voided before it came (once.lua)
--
-- Permits that came (set, or added n > 0) wake every waiter: a waiter
-- refused before any holder existed marked nothing that a release would
-- see, so only this message reaches it.
local permits, n, answer = KEYS[1], tonumber(ARGV[2]), KEYS[3]
if voided(answer) then
    return false
end
local t = redis.call('type', permits).ok
if t ~= 'string' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE semaphore key ' .. permits .. ' is not a string')
end
local reply
if ARGV[1] == 'set' then
    if t == 'string' then
        return answered(answer, ARGV[5], 0)
    end
    redis.call('set', permits, ARGV[2])
    reply = 1
else
    -- Compared before adding: a sum beyond 2^53 would be rounded.
    local now, most = tonumber(redis.call('get', permits) or '0'), tonumber(ARGV[4])
    if (n >= 0 and now > most - n) or (n < 0 and now < -(most + n)) then
        return answered(answer, ARGV[5], false)
    end
    reply = redis.call('incrby', permits, ARGV[2])
end
if n > 0 then
    redis.call(ARGV[3], KEYS[2], 'all')
end
return answered(answer, ARGV[5], reply)
