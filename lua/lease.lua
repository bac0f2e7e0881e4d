-- lease: the Redis clock and key expiry, for the scripts and helpers that
-- read the one or lengthen the other.

-- nowMs is the Redis server time in ms: the clock that own leases (F#exp)
-- are kept in.
local function nowMs()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- lengthen makes key last at least ms more: PEXPIRE GT only lengthens, so
-- a longer lease a live hold relies on is kept, and a key without expiry
-- (just made, or made persistent by hand) gets one.
local function lengthen(key, ms)
    if redis.call('pexpire', key, ms, 'gt') == 0 and redis.call('pttl', key) == -1 then
        redis.call('pexpire', key, ms)
    end
end
