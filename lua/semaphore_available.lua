#!lua flags=no-writes
--@include lease.lua
--@include holders.lua
-- semaphore_available: how many permits of a semaphore are free.
--
-- KEYS[1] holders hash      P{N}:semaphore (see holders.lua)
-- KEYS[2] permits           P{N}:semaphore:permits
--
-- Reply (a number, not a code): the permits minus those that live holders hold; below 0 when
-- permits were taken away (AddPermits with n < 0) while held. Holders
-- whose lease passed count as gone. Read-only.
local live = 0
if redis.call('exists', KEYS[1]) == 1 then
    live = holders(KEYS[1], nowMs(), false)
end
return tonumber(redis.call('get', KEYS[2]) or '0') - live
