#!lua flags=no-writes
--@include lease.lua
-- hold count: how many levels (permits) an owner holds, for HoldCount.
--
-- KEYS[1] lock hash         P{N} (a semaphore's holders hash too)
-- ARGV[1] owner field
--
-- Reply (a number, not a code): the field's count; 0 when it is missing,
-- or when its own lease (F#exp, a semaphore holder's) has ended: Redis
-- keeps such a field while other holders keep the hash, but it holds
-- nothing.
local held = redis.pcall('hmget', KEYS[1], ARGV[1], ARGV[1] .. '#exp')
if held.err then
    return held
end
if not held[1] or (held[2] and tonumber(held[2]) <= nowMs()) then
    return 0
end
return tonumber(held[1])
