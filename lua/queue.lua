--@include token.lua
-- queue: the helpers of a fair lock's scripts (fair_acquire.lua and
-- fair_release.lua).
--
-- The queue hash P{N}:queue is a doubly linked list of waiters, so that a
-- release finds the one longest in it, and a waiter leaves it, with a
-- couple of commands, however long it is. For each waiter W (an owner
-- field):
--   W        '1': W is queued
--   W#exp    its own lease: the Redis time in ms at which it ends. The
--            watchdog renews it (renew.lua) as it renews a hold, so a
--            waiter whose process died drops out within one lease.
--   W#seq    the seq of W's latest call that applied (see acquire.lua)
--   W#lease  the lease in ms to grant W, or '0' for what is left of its
--            own lease (a hold the watchdog renews)
--   W#prev   the waiter queued just before W, if any
--   W#next   the waiter queued just after W, if any
-- and '#head' and '#last', the first and the last waiter. A waiter whose
-- own lease has passed is dropped when it reaches the head. The key's own
-- expiry is moved with every entry's, so it outlives them all and then
-- goes; Redis deletes it when the last waiter leaves.

-- link sets field f of queue to v, or deletes it when v is false.
local function link(queue, f, v)
    if v then
        redis.call('hset', queue, f, v)
    else
        redis.call('hdel', queue, f)
    end
end

-- enqueue puts waiter w, not queued yet, at the back of queue.
local function enqueue(queue, w)
    local last = redis.call('hget', queue, '#last')
    if last then
        redis.call('hset', queue, w, 1, w .. '#prev', last, last .. '#next', w, '#last', w)
    else
        redis.call('hset', queue, w, 1, '#head', w, '#last', w)
    end
end

-- dequeue takes waiter w out of queue, joining its neighbours.
local function dequeue(queue, w)
    local n = redis.call('hmget', queue, w, w .. '#prev', w .. '#next')
    if not n[1] then
        return
    end
    local prev, nxt = n[2], n[3]
    link(queue, prev and prev .. '#next' or '#head', nxt)
    link(queue, nxt and nxt .. '#prev' or '#last', prev)
    redis.call('hdel', queue, w, w .. '#exp', w .. '#seq', w .. '#lease', w .. '#prev', w .. '#next')
end

-- head returns the live waiter longest in queue and the one after it,
-- after dropping the waiters ahead whose own lease ended by now; nil when
-- nobody lives in it (or queue is not a hash).
local function head(queue, now)
    local w = redis.pcall('hget', queue, '#head')
    while type(w) == 'string' do
        local e = redis.call('hmget', queue, w .. '#exp', w .. '#next')
        if tonumber(e[1] or '0') > now then
            return w, e[2] or nil
        end
        dequeue(queue, w)
        w = e[2]
    end
    return nil
end

-- handOver makes waiter w of queue the owner of the free lock hash: count
-- 1, the next fencing token of counter, the lease its entry asks for;
-- takes w out of queue; and tells it with a message addressed to it on
-- channel (pub: 'publish' or 'spublish'): '@<w> <seq> <token>', seq being
-- that of w's call that queued it last, which is now w's seq on the lock.
-- The waiter after it, when there is one, is told '@<after> next <lease
-- ms>': if w died, the lock expires then, and that waiter must ask for it.
-- It returns an error reply when counter is not a counter, having written
-- nothing.
local function handOver(hash, counter, queue, channel, pub, w, after, now)
    local token, err = nextToken(counter)
    if not token then
        return err
    end
    local e = redis.call('hmget', queue, w .. '#seq', w .. '#lease', w .. '#exp')
    local wseq, lease = e[1], e[2]
    if lease == '0' then
        lease = tonumber(e[3]) - now
    end
    redis.call('hset', hash, w, 1, w .. '#seq', wseq)
    redis.call('pexpire', hash, lease)
    dequeue(queue, w)
    redis.call(pub, channel, '@' .. w .. ' ' .. wseq .. ' ' .. string.format('%d', token))
    if after then
        redis.call(pub, channel, '@' .. after .. ' next ' .. lease)
    end
    return nil
end
