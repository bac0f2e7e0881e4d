#!lua flags=allow-oom
-- force release: delete the lock whoever holds it, every hold on it (an
-- RWMutex's readers and writer alike), and wake every waiter
-- ('all', pubsub.WakeAll): each asks again, and the kind's own rule (the
-- fair queue's order, writers before new readers) picks who takes it.
--
-- KEYS[1] lock hash         P{N}
-- KEYS[2] unlock channel    P{N}:unlock
-- ARGV[1] publish command: 'publish', or 'spublish' on a Cluster
--
-- Reply (a number, not a code): 1 if a lock was deleted, 0 if there was
-- none.
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[1], KEYS[2], 'all')
    return 1
end
return 0
