#!lua flags=allow-oom
-- renew: extend the lease of many held locks in one call (watchdog batch).
-- All keys must live in one Cluster slot.
--
-- KEYS[i]   lock hash of hold i
-- ARGV[1]   lease in ms
-- ARGV[i+1] owner field of hold i
--
-- Reply: an array with one entry per key: 1 if the owner still holds it
-- (its lease now ends no sooner than lease ms from now), 0 if the lock is
-- gone, held by someone else, or the key is not a lock hash any more.
--
-- PEXPIRE GT only lengthens: a re-entry with a longer fixed lease keeps it.
-- Owner-checked and so idempotent: safe to resend after a lost reply.
local lease = ARGV[1]
local out = {}
for i = 1, #KEYS do
    -- pcall: a key that is no longer a hash (someone overwrote the lock)
    -- answers WRONGTYPE, which means lost for that hold, not a failed batch.
    if redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        -- GT only lengthens; a key made persistent (PERSIST by hand)
        -- gets its lease back.
        if redis.call('pexpire', KEYS[i], lease, 'gt') == 0 and redis.call('pttl', KEYS[i]) == -1 then
            redis.call('pexpire', KEYS[i], lease)
        end
        out[i] = 1
    else
        out[i] = 0
    end
end
return out
