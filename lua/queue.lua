--@include client.lua
--@include hold.lua
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

-- enqueue puts waiter w, not queued yet, at the back of queue, and sets
-- the fields of its entry, given as field, value, ..., in the same HSET.
local function enqueue(queue, w, ...)
    local last = redis.call('hget', queue, '#last')
    if last then
        redis.call('hset', queue, w, 1, w .. '#prev', last, last .. '#next', w, '#last', w, ...)
    else
        redis.call('hset', queue, w, 1, '#head', w, '#last', w, ...)
    end
end

-- popHead takes waiter w, the head of queue, out of it, nxt being the
-- waiter after it (false: none, and w is the only one, so the queue goes).
local function popHead(queue, w, nxt)
    if not nxt then
        redis.call('del', queue)
        return
    end
    redis.call('hset', queue, '#head', nxt)
    redis.call('hdel', queue, w, w .. '#exp', w .. '#seq', w .. '#lease', w .. '#next', nxt .. '#prev')
end

-- dequeue takes waiter w out of queue, joining its neighbours.
local function dequeue(queue, w)
    local n = redis.call('hmget', queue, w, w .. '#prev', w .. '#next')
    if not n[1] then
        return
    end
    local prev, nxt = n[2], n[3]
    if not prev then
        popHead(queue, w, nxt)
        return
    end
    link(queue, prev .. '#next', nxt)
    link(queue, nxt and nxt .. '#prev' or '#last', prev)
    redis.call('hdel', queue, w, w .. '#exp', w .. '#seq', w .. '#lease', w .. '#prev', w .. '#next')
end

-- head returns the live waiter longest in queue and its entry {W#exp,
-- W#next, W#seq, W#lease} (W#next false for none), after dropping the
-- waiters ahead whose own lease ended by now; nil when nobody lives in it
-- (or queue is not a hash).
local function head(queue, now)
    local w = redis.pcall('hget', queue, '#head')
    while type(w) == 'string' do
        local e = redis.call('hmget', queue, w .. '#exp', w .. '#next', w .. '#seq', w .. '#lease')
        if tonumber(e[1] or '0') > now then
            return w, e
        end
        dequeue(queue, w)
        w = e[2]
    end
    return nil
end

-- untilHeadLapses caps pttl, a refusal's, for waiter w, queued in queue,
-- at what is left at now of the own lease of the queue's head when that
-- is another waiter whose lease has not ended yet (one that has is
-- dropped when the lock is free: capping at it would have w ask in a loop
-- while the lock is held).
local function untilHeadLapses(queue, w, pttl, now)
    local first = redis.call('hget', queue, '#head')
    if not first or first == w then
        return pttl
    end
    local left = tonumber(redis.call('hget', queue, first .. '#exp') or '0') - now
    if left > 0 and (pttl < 0 or left < pttl) then
        return left
    end
    return pttl
end

-- giveTo makes waiter w, the head of queue, the owner of the free lock
-- hash: count 1, the next fencing token of counter, w's seq on the lock
-- wseq, the lease ms (renewed: by the watchdog, else marked fixed, as
-- hold.lua's take marks a hold); and takes w out of queue. The waiter after
-- it (after, w's #next), if any, is told '@<after> next <ms>' on its inbox
-- for channel (client.lua; pub: 'publish' or 'spublish'): if w died, or its
-- fixed lease runs out, the lock expires then, and that waiter must ask for
-- it. Not when it is of w's Client and the lease is renewed: such a lease
-- ends only when w's process dies, and the waiter with it. It returns the
-- token, or nil and an error reply when counter is not a counter, having
-- written nothing.
local function giveTo(hash, counter, queue, channel, pub, w, after, wseq, ms, renewed)
    local token, err = nextToken(counter)
    if not token then
        return nil, err
    end
    redis.call('hset', hash, w, 1, w .. '#seq', wseq)
    markFixed(hash, w, renewed)
    redis.call('pexpire', hash, ms)
    popHead(queue, w, after)
    if after and not (renewed and clientOf(after) == clientOf(w)) then
        redis.call(pub, inboxOf(channel, after), '@' .. after .. ' next ' .. ms)
    end
    return token
end

-- handOver grants the free lock hash to waiter w, the head of queue whose
-- entry head read as e, with the lease the entry asks for, and tells it
-- with a message addressed to it on its inbox for channel: '@<w> <seq>
-- <token>', seq being that of w's call that queued it last, which is now
-- w's seq on the lock. It returns an error reply when counter is not a
-- counter, having written nothing.
local function handOver(hash, counter, queue, channel, pub, w, e, now)
    local wseq, lease, renewed = e[3], e[4], e[4] == '0'
    if renewed then
        lease = tonumber(e[1]) - now
    end
    local token, err = giveTo(hash, counter, queue, channel, pub, w, e[2], wseq, lease, renewed)
    if not token then
        return err
    end
    redis.call(pub, inboxOf(channel, w), '@' .. w .. ' ' .. wseq .. ' ' .. string.format('%d', token))
    return nil
end
