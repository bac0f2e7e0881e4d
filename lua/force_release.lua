#!lua flags=allow-oom
--@include once.lua
-- force release: delete the lock whoever holds it, every hold on it (an
-- RWMutex's readers and writer alike), and wake every waiter
-- ('all', pubsub.WakeAll): each asks again, and the kind's own rule (the
-- fair queue's order, writers before new readers) picks who takes it.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] unlock channel    P{N}:unlock
-- KEYS[3] the call's answer key, ARGV[2] fence life in ms (once.lua)
-- ARGV[1] publish command: 'publish', or 'spublish' on a Cluster
--
-- Reply (a number, not a code): 1 if a lock was deleted, 0 if there was
-- none; false for a call voided before it came (once.lua).
if voided(KEYS[3]) then
    return false
end
local deleted = redis.call('del', KEYS[1])
if deleted == 1 then
    redis.call(ARGV[1], KEYS[2], 'all')
end
return answered(KEYS[3], ARGV[2], deleted)
