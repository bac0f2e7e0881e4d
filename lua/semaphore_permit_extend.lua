#!lua flags=allow-oom
--@include lease.lua
-- semaphore_permit_extend: lengthen the own lease of a travelling permit
-- of a semaphore, from any Client.
--
-- KEYS[1] holders hash      P{N}:semaphore (see holders.lua)
-- ARGV[1] permit field P    'permit:<id>'
-- ARGV[2] lease in ms
--
-- Reply (a number, not a code): 1 when the permit is live and its lease
-- now ends no earlier than lease from now; 0 when no live permit has that
-- id (never taken, given back, or its lease passed: an expired permit is
-- not revived), and nothing was written.
--
-- Like renew.lua it is checked against the permit and only lengthens
-- (P#exp and the hash's PEXPIRE), so a resend or a late copy does no harm:
-- rueidis may resend it. allow-oom: a permit must be kept at maxmemory.
local hash, permit = KEYS[1], ARGV[1]
if redis.call('type', hash).ok ~= 'hash' then
    return 0
end
local held = redis.call('hmget', hash, permit, permit .. '#exp')
local now, lease = nowMs(), tonumber(ARGV[2])
if not held[1] or not held[2] or tonumber(held[2]) <= now then
    return 0
end
if now + lease > tonumber(held[2]) then
    redis.call('hset', hash, permit .. '#exp', now + lease)
end
lengthen(hash, lease)
return 1
