#!lua flags=allow-oom
-- release: leave one level of a reentrant lock; the last level deletes it and
-- wakes a waiter.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] unlock channel    P{N}:unlock
-- KEYS[3] request latch     P{N}:latch:<requestID>
-- ARGV[1] owner field       <clientID>:<ownerToken>
-- ARGV[2] lease in ms, set again while the owner still holds it
-- ARGV[3] latch lifetime in ms
-- ARGV[4] publish command: 'publish', or 'spublish' on a Cluster
--
-- Reply: {0, 0}     the owner does not hold the lock
--        {1, count} still held, count levels left
--        {2, 0}     released: the key is gone and the channel was told
--
-- A repeated request (same latch) returns the first reply without counting
-- down twice. allow-oom: releasing must work when Redis is at maxmemory.
local latched = redis.call('get', KEYS[3])
if latched then
    return cjson.decode(latched)
end
local reply
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    reply = {0, 0}
else
    local count = redis.call('hincrby', KEYS[1], ARGV[1], -1)
    if count > 0 then
        redis.call('pexpire', KEYS[1], ARGV[2])
        reply = {1, count}
    else
        redis.call('del', KEYS[1])
        redis.call(ARGV[4], KEYS[2], 'unlocked')
        reply = {2, 0}
    end
end
redis.call('set', KEYS[3], cjson.encode(reply), 'px', ARGV[3])
return reply
