#!lua flags=allow-oom
--@include lease.lua
-- renew: extend the lease of many held locks in one call (watchdog batch).
-- All keys must live in one Cluster slot.
--
-- KEYS[i]   lock hash of hold i
-- ARGV[1]   lease in ms
-- ARGV[i+1] owner field of hold i
--
-- Reply (numbers, not codes): an array with one entry per key: 1 if the owner still holds it
-- (its lease now ends no sooner than lease ms from now), 0 if the lock is
-- gone, held by someone else, or the key is not a lock hash any more; and
-- 0 for a hold of a fixed lease (F#fix, see hold.lua): a renewal sent for
-- an earlier hold of the same owner, which the watchdog renewed, that
-- reaches Redis late must not stretch a later hold's fixed lease.
--
-- A hold that has a lease of its own beside the key's (a reader among
-- readers, one permit holder among several) keeps it in the field
-- F#exp: the Redis time, in ms, at which it ends; the scripts of those
-- primitives drop a field whose F#exp has passed. Renewal moves F#exp to
-- now + lease, never earlier, and the key's lease, which must outlast every
-- hold in it, with it. A field whose own lease has passed is lost, even if
-- the key still lives for other holders.
--
-- PEXPIRE GT only lengthens: a re-entry with a longer fixed lease keeps it.
-- Owner-checked and so idempotent: safe to resend after a lost reply.
local lease = ARGV[1]
local now -- Redis time in ms, read once, when a hold has its own lease

-- renewOwn moves the own lease exp of field F on hash to now + lease,
-- and reports false when it had passed already.
local function renewOwn(hash, exp, ends)
    now = now or nowMs()
    if ends <= now then
        return false
    end
    if ends < now + tonumber(lease) then
        redis.call('hset', hash, exp, now + tonumber(lease))
    end
    return true
end

local out = {}
for i = 1, #KEYS do
    local hash, field = KEYS[i], ARGV[i + 1]
    out[i] = 0
    -- pcall: a key that is no longer a hash (someone overwrote the lock)
    -- answers WRONGTYPE, which means lost for that hold, not a failed batch.
    local held = redis.pcall('hmget', hash, field, field .. '#exp', field .. '#fix')
    if type(held) == 'table' and held[1] and not held[3] and (not held[2] or renewOwn(hash, field .. '#exp', tonumber(held[2]))) then
        lengthen(hash, lease)
        out[i] = 1
    end
end
return out
