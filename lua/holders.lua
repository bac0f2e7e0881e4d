--@include hold.lua
-- holders: the helper the semaphore's scripts share.
--
-- A semaphore's holders hash keeps, for each holder F (an owner field):
-- F -> permits it holds, F#seq -> the seq of its latest call that applied
-- (see acquire.lua), and F#exp -> the Redis time in ms at which its own
-- lease ends (see renew.lua), and F#fix while that lease is fixed (see
-- hold.lua); and 'waiters' while someone may wait. A
-- holder whose F#exp has passed holds nothing: its process died or lost
-- it, and its permits are free again.

-- holders reads the holders of hash at now, and returns the permits the
-- live ones hold, the earliest end of their leases (nil when none live),
-- the permits of the expired ones, and the hash's fields (field -> value)
-- less the expired holders'. With drop, the expired ones are deleted.
local function holders(hash, now, drop)
    local all = redis.call('hgetall', hash)
    local fields, count, ends = {}, {}, {}
    for i = 1, #all, 2 do
        local f, tail = all[i], string.sub(all[i], -4)
        fields[f] = all[i + 1]
        if tail == '#exp' then
            ends[string.sub(f, 1, -5)] = tonumber(all[i + 1])
        elseif tail ~= '#seq' and tail ~= '#fix' and f ~= 'waiters' then
            count[f] = tonumber(all[i + 1])
        end
    end
    local live, earliest, expired = 0, nil, 0
    for f, n in pairs(count) do
        local e = ends[f]
        if e and e > now then
            live = live + n
            if not earliest or e < earliest then
                earliest = e
            end
        else
            expired = expired + n
            fields[f], fields[f .. '#seq'], fields[f .. '#exp'], fields[f .. '#fix'] = nil, nil, nil, nil
            if drop then
                dropFields(hash, f)
            end
        end
    end
    return live, earliest, expired, fields
end

-- permitsBack ends a release after which live permits are held and freed
-- came back (the released ones, and expired holders' dropped on the way):
-- the hash goes when no holder is left, and when permits came back and
-- someone waits (waiting: the hash's 'waiters' field) the channel is told
-- with publish: 'unlocked' wakes one waiter for one permit, 'all' every
-- waiter for more.
local function permitsBack(hash, live, freed, waiting, publish, channel)
    if live == 0 then
        redis.call('del', hash)
    end
    if freed > 0 and waiting then
        local message = 'unlocked'
        if freed > 1 then
            message = 'all'
        end
        redis.call(publish, channel, message)
    end
end
