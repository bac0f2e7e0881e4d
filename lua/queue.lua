--@include client.lua
--@include hold.lua
--@include lease.lua
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
--   W#wake   the Redis time in ms by which W asks again at the latest,
--            unless told otherwise: a refusal's time plus the pttl it was
--            refused with (laterWake); 0 when unknown
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

-- enqueue puts waiter w, not queued yet, at the back of queue, whose last
-- waiter is last (false: the queue is empty), and sets the fields of its
-- entry, given as field, value, ..., in the same HSET.
local function enqueue(queue, w, last, ...)
    if last then
        redis.call('hset', queue, w, 1, w .. '#prev', last, last .. '#next', w, '#last', w, ...)
    else
        redis.call('hset', queue, w, 1, '#head', w, '#last', w, ...)
    end
end

-- entryFields are the fields of waiter w's entry but its links, as the
-- last arguments of a call (Lua passes every value only from the last).
local function entryFields(w)
    return w, w .. '#exp', w .. '#seq', w .. '#lease', w .. '#wake'
end

-- popHead takes waiter w, the head of queue, out of it, nxt being the
-- waiter after it (false: none, and w is the only one, so the queue goes).
local function popHead(queue, w, nxt)
    if not nxt then
        redis.call('del', queue)
        return
    end
    redis.call('hset', queue, '#head', nxt)
    redis.call('hdel', queue, w .. '#next', nxt .. '#prev', entryFields(w))
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
    redis.call('hdel', queue, w .. '#prev', w .. '#next', entryFields(w))
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

-- laterWake is what W#wake becomes, from was, when a call of W is refused
-- and will ask again by wake (0: its pttl did not say when). The calls of
-- one owner share its entry, and one that gives up leaves it to the
-- others: so the entry keeps the latest time, since the call that would
-- bring it forward may be the one that gives up next. Once 0, it stays 0;
-- a missing W#wake (an entry that a script older than W#wake wrote) reads
-- as 0.
local function laterWake(was, wake)
    was = tonumber(was) or 0
    if was <= 0 or wake <= 0 then
        return 0
    end
    return math.max(was, wake)
end

-- untilHeadLapses caps pttl, a refusal's, for waiter w, which queue
-- holds or is to hold behind first, its head (false: the queue is empty,
-- and w is to head it), at what is left at now of first's own lease when
-- first is another waiter whose lease has not ended yet (one that has is
-- dropped when the lock is free: capping at it would have w ask in a loop
-- while the lock is held).
local function untilHeadLapses(queue, w, first, pttl, now)
    if not first or first == w then
        return pttl
    end
    local left = tonumber(redis.call('hget', queue, first .. '#exp') or '0') - now
    if left > 0 and (pttl < 0 or left < pttl) then
        return left
    end
    return pttl
end

-- mustTell says whether waiter after, next in queue behind w, which was
-- just given the lock for ms, must be told of that lease. Not when after
-- is of w's Client and the lease is renewed: such a lease ends only when
-- w's process dies, and the waiter with it. Nor when after's latest
-- refusal has it ask by the time the lease ends (W#wake): so a hand-over
-- across Clients tells one process, the new holder's, as a rule. now is
-- the Redis time in ms, or nil when not read yet.
local function mustTell(queue, w, after, ms, renewed, now)
    if renewed and clientOf(after) == clientOf(w) then
        return false
    end
    local wake = tonumber(redis.call('hget', queue, after .. '#wake') or '0')
    return wake <= 0 or wake > (now or nowMs()) + tonumber(ms)
end

-- giveTo makes waiter w, the head of queue, the owner of the free lock
-- hash: count 1, the next fencing token of counter, w's seq on the lock
-- wseq, the lease ms (renewed: by the watchdog, else marked fixed, as
-- hold.lua's take marks a hold); and takes w out of queue. The waiter after
-- it (after, w's #next), if any, must ask for the lock by the time the
-- lease ends: if w died, or its fixed lease runs out, the lock expires
-- then, and its expiry tells nobody. So it is told '@<after> next <ms>' on
-- its inbox for channel (client.lua; pub: 'publish' or 'spublish') unless
-- it asks by then anyway (mustTell). It returns the token, or nil and an
-- error reply when counter is not a counter, having written nothing. now
-- is the Redis time in ms, or nil when not read yet.
local function giveTo(hash, counter, queue, channel, pub, w, after, wseq, ms, renewed, now)
    local token, err = nextToken(counter)
    if not token then
        return nil, err
    end
    redis.call('hset', hash, w, 1, w .. '#seq', wseq)
    markFixed(hash, w, renewed)
    redis.call('pexpire', hash, ms)
    popHead(queue, w, after)
    if after and mustTell(queue, w, after, ms, renewed, now) then
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
    local token, err = giveTo(hash, counter, queue, channel, pub, w, e[2], wseq, lease, renewed, now)
    if not token then
        return err
    end
    redis.call(pub, inboxOf(channel, w), '@' .. w .. ' ' .. wseq .. ' ' .. string.format('%d', token))
    return nil
end
