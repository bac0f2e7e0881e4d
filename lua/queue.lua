-- queue: the helpers of a fair lock's scripts (fair_acquire.lua and
-- fair_release.lua); scripts.go puts it after their first line, with
-- fence.lua and token.lua, which it uses.
--
-- The queue hash P{N}:queue holds, for each waiter W (an owner field):
--   W        its ticket: the order in which it queued
--   W#exp    its own lease: the Redis time in ms at which it ends. The
--            watchdog renews it (renew.lua) as it renews a hold, so a
--            waiter whose process died drops out within one lease.
--   W#seq    the seq of W's latest call that applied (see acquire.lua)
--   W#lease  the lease in ms to grant W, or '0' for what is left of its
--            own lease (a hold the watchdog renews)
-- and '#tail', the last ticket given. Entries whose own lease has passed
-- are dropped before anything is decided. The key's own expiry is moved
-- with every entry's, so it outlives them all and then goes.

-- dequeue takes waiter w out of queue, and the queue away once nobody is
-- left in it.
local function dequeue(queue, w)
    redis.call('hdel', queue, w, w .. '#exp', w .. '#seq', w .. '#lease')
    if redis.call('hlen', queue) <= 1 then
        redis.call('del', queue)
    end
end

-- head returns the live waiter longest in queue, the one after it, and the
-- queue's fields, after dropping the entries whose own lease ended by now;
-- nil when nobody lives in it (or queue is not a hash).
local function head(queue, now)
    local flat = redis.pcall('hgetall', queue)
    if flat.err then
        return nil
    end
    local f = {}
    for i = 1, #flat, 2 do
        f[flat[i]] = flat[i + 1]
    end
    local first, second, t1, t2
    for w, v in pairs(f) do
        if not string.find(w, '#', 1, true) then
            local t = tonumber(v)
            if tonumber(f[w .. '#exp'] or '0') <= now then
                dequeue(queue, w)
            elseif not t1 or t < t1 then
                first, second, t1, t2 = w, first, t, t1
            elseif not t2 or t < t2 then
                second, t2 = w, t
            end
        end
    end
    return first, second, f
end

-- handOver makes waiter w, whose entry is in fields f, the owner of the
-- free lock hash: count 1, the next fencing token of counter, the lease
-- its entry asks for; takes w out of queue; and tells it with a message
-- addressed to it on channel (pub: 'publish' or 'spublish'):
-- '@<w> <seq> <token>', seq being that of w's call that queued it last,
-- which is now w's seq on the lock. The waiter after it, when there is
-- one, is told '@<after> next <lease ms>': if w died, the lock expires
-- then, and that waiter must ask for it. It returns an error reply when
-- counter is not a counter, having written nothing.
local function handOver(hash, counter, queue, channel, pub, w, after, f, now)
    local token, err = nextToken(counter)
    if not token then
        return err
    end
    local lease = f[w .. '#lease']
    if lease == '0' then
        lease = tonumber(f[w .. '#exp']) - now
    end
    local wseq = f[w .. '#seq']
    redis.call('hset', hash, w, 1, w .. '#seq', wseq)
    redis.call('pexpire', hash, lease)
    dequeue(queue, w)
    redis.call(pub, channel, '@' .. w .. ' ' .. wseq .. ' ' .. string.format('%d', token))
    if after then
        redis.call(pub, channel, '@' .. after .. ' next ' .. lease)
    end
    return nil
end
