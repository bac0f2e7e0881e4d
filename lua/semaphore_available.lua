#!lua flags=no-writes
--@include lease.lua
--@include holders.lua
-- semaphore_available: how many permits of a semaphore are free.
--
-- KEYS[1] holders hash      P{N}:semaphore (see holders.lua)
-- KEYS[2] permits           P{N}:semaphore:permits
--
-- Reply (not a code): {permits, held}, the permits as stored (a string)
-- and those that live holders hold; the free permits are the difference,
-- below 0 when permits were taken away (AddPermits with n < 0) while held.
-- The caller subtracts: permits go down to -2^53, below which Lua's
-- numbers are not exact. Holders whose lease passed count as gone.
-- Read-only.
local live = 0
if redis.call('exists', KEYS[1]) == 1 then
    live = holders(KEYS[1], nowMs(), false)
end
return {redis.call('get', KEYS[2]) or '0', live}
