#!lua
--@include once.lua
-- latch_set: set a count-down latch's count when it is 0 or unset.
--
-- KEYS[1] latch hash        P{N}:latch (see latch_countdown.lua)
-- ARGV[1] count, > 0
-- KEYS[2] the call's answer key, ARGV[2] fence life in ms (once.lua)
--
-- Reply (a number, not a code): 1 when it set the count, 0 when the latch
-- was counting already; false for a call voided before it came
-- (once.lua).
-- The hash is made persistent again: a latch at 0 expires, a counting one
-- does not. The Clients' C#seq fields stay: sequence numbers only grow.
-- 'gen' names this setting of the count, after the call (the last part of
-- its answer key, C!<seq>, which no other call has): an Await that finds
-- it changed since its first read returns, as the latch reached 0 in
-- between, even when it expired at 0 before it was set again.
local hash, answer = KEYS[1], KEYS[2]
if voided(answer) then
    return false
end
local t = redis.call('type', hash).ok
if t ~= 'hash' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE latch key ' .. hash .. ' is not a hash')
end
if tonumber(redis.call('hget', hash, 'count') or '0') > 0 then
    return answered(answer, ARGV[2], 0)
end
redis.call('hset', hash, 'count', ARGV[1], 'gen', string.match(answer, '[^:]*$'))
redis.call('persist', hash)
return answered(answer, ARGV[2], 1)
