--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include token.lua
-- hold: what the scripts of a lock (acquire.lua, release.lua and the fair
-- lock's) do to an owner's hold: take a free lock, re-enter, lower the
-- count. It reads the KEYS and ARGV those scripts share (acquire.lua's,
-- release.lua's).
--
-- held is the owner's HMGET of ARGV[1] and ARGV[1]#seq on KEYS[1].
--
-- F#fix marks a hold whose lease is fixed (ARGV[10] '0'): renew.lua
-- refuses it. The watchdog's renewals of an earlier hold of F may still be
-- on their way (a reply lost, Redis paused) when F takes the lock again
-- for a fixed lease; without the mark a late one would stretch that lease
-- to the watchdog's. A re-entry that the watchdog renews removes it.

-- markFixed writes F#fix on hash for owner when the grant's lease is
-- fixed (renewed false).
local function markFixed(hash, owner, renewed)
    if not renewed then
        redis.call('hset', hash, owner .. '#fix', 1)
    end
end

-- remark sets F#fix on hash for a grant to owner that found it holding
-- (fixed: F#fix was read as set), with count the count sent. A count of 1
-- is a new hold of the owner's Client over one Redis still has (the
-- Client's earlier hold ended: renewals sent for it may still come), and
-- is marked as take marks one. A re-entry of a live hold that the
-- watchdog renews unmarks it; a fixed one leaves the mark as it is, as
-- the Client leaves the hold renewed or not.
local function remark(hash, owner, fixed, count)
    local renewed = ARGV[10] == '1'
    if renewed and fixed then
        redis.call('hdel', hash, owner .. '#fix')
    elseif not fixed and count == '1' then
        markFixed(hash, owner, renewed)
    end
end

-- dropFields deletes from hash every field of f's hold, in a hash of
-- several holds (RWMutex, Semaphore): f, f#seq, f#exp (its own lease) and
-- f#fix. A hold's end that leaves one behind lets such fields pile up.
local function dropFields(hash, f)
    redis.call('hdel', hash, f, f .. '#seq', f .. '#exp', f .. '#fix')
end

-- gone answers a re-entry (a count above 1, ARGV[3]) of an owner that
-- holds nothing here: Redis lost the hold it re-enters (it expired, or was
-- forced), so the call takes nothing and answers {NOT_HELD, 0}, after
-- fencing what it supersedes. It returns nil for a first level, which
-- takes a free lock. Were the re-entry to take the free lock afresh, at
-- one level, a caller that gave it up would settle it by a release to the
-- count it held, which would find that level and leave it: the lost hold
-- would run on, under its old fencing token, over a new one (and so would
-- a level the replicas did not acknowledge, given back to that count).
local function gone()
    if ARGV[3] == '1' then
        return nil
    end
    fence(KEYS[3], ARGV[1], tonumber(ARGV[5]), ARGV[6])
    return {NOT_HELD, 0}
end

-- take gives the free lock to the owner: count 1, a new fencing token,
-- the lease ARGV[4] ms: {GRANTED, 1, token}. waiting marks the lock so that its release wakes
-- the waiters behind this one (see acquire.lua).
local function take(waiting)
    local token, err = nextToken(KEYS[2])
    if not token then
        return err
    end
    local hash, owner = KEYS[1], ARGV[1]
    if waiting then
        redis.call('hset', hash, owner, 1, owner .. '#seq', ARGV[2], 'waiters', 1)
    else
        redis.call('hset', hash, owner, 1, owner .. '#seq', ARGV[2])
    end
    markFixed(hash, owner, ARGV[10] == '1')
    redis.call('pexpire', hash, ARGV[4])
    fence(KEYS[3], owner, tonumber(ARGV[5]), ARGV[6])
    return {GRANTED, 1, token}
end

-- reenter answers an acquire of an owner that holds the lock: STALE when
-- a later call of the owner applied already, else GRANTED, its count set
-- to ARGV[3] and the lease lengthened to ARGV[4] ms (never shortened),
-- and the hold marked anew (remark; fixed: F#fix was read as set).
local function reenter(held, fixed)
    if tonumber(held[2]) >= tonumber(ARGV[2]) then
        return {STALE, 0}
    end
    local hash = KEYS[1]
    local token = tonumber(redis.call('get', KEYS[2]) or '0')
    redis.call('hset', hash, ARGV[1], ARGV[3], ARGV[1] .. '#seq', ARGV[2])
    remark(hash, ARGV[1], fixed, ARGV[3])
    lengthen(hash, ARGV[4])
    fence(KEYS[3], ARGV[1], tonumber(ARGV[5]), ARGV[6])
    return {GRANTED, tonumber(ARGV[3]), token}
end

-- lower answers a release of an owner that holds the lock: STALE when a
-- later call of the owner applied already, else STILL_HELD with its count
-- set to ARGV[3], or left as it is when it is lower (a release never
-- raises a count: settling a lost acquire by an owner whose earlier hold
-- ended names that hold's count). It returns nil when that count is 0:
-- the caller frees the lock.
local function lower(held)
    if tonumber(held[2]) >= tonumber(ARGV[2]) then
        return {STALE, 0}
    end
    fence(KEYS[3], ARGV[1], tonumber(ARGV[5]), ARGV[6])
    local left = math.min(tonumber(ARGV[3]), tonumber(held[1]))
    if left > 0 then
        redis.call('hset', KEYS[1], ARGV[1], left, ARGV[1] .. '#seq', ARGV[2])
        return {STILL_HELD, left}
    end
    return nil
end
