--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include token.lua
--@include hold.lua
-- rw: the helpers the read-write lock's scripts share.
--
-- A read-write lock is one hash. Every hold in it, read or write, has a
-- lease of its own (see renew.lua): for owner base B (<clientID>:<owner>),
--   B:r -> read count,  B:r#seq, B:r#exp     a read hold
--   B:w -> write count, B:w#seq, B:w#exp     the write hold
--   B:r#fix, B:w#fix -> 1                    a hold's lease is fixed:
--                                            no renewal lengthens it (hold.lua)
--   B:w#wait -> ms                           a writer waiting, until then
--   B:r#wait -> ms                           a reader waiting, until then
--   B:r#admit -> ms                          a reader a write release let
--                                            in ahead of waiting writers
--   mode -> 'rw'    the hash is a read-write lock (a Mutex's is not)
--   w -> B:w        who holds the write lock, while someone does
--   wait -> ms      the latest end of a waiting writer's mark: new readers
--                   are refused until then (no writer starvation)
--   nr -> n         the read holds in the hash, live or not yet pruned
--   waiters -> 1    someone was refused: a release that may let them in
--                   publishes 'all' (pubsub.WakeAll)
-- The key's own expiry only bounds the hash's life: it is lengthened to
-- cover every lease and mark put in it. What counts is each field's #exp.

-- hdelAll deletes the fields of list from hash, in chunks that Lua's stack
-- takes.
local function hdelAll(hash, list)
    for i = 1, #list, 1000 do
        redis.call('hdel', hash, unpack(list, i, math.min(i + 999, #list)))
    end
end

-- dropHold deletes the hold of field from hash, and counts a read hold out
-- of 'nr' (see prune).
local function dropHold(hash, field)
    dropFields(hash, field)
    if string.sub(field, -2) == ':r' then
        redis.call('hincrby', hash, 'nr', -1)
    end
end

-- prune drops from hash every hold, mark and admission whose own lease
-- ended by now, and returns what lives, as a table:
--   readers   the read holds' count
--   writer    the write hold's field, or nil
--   last      the latest end among the holds (ms)
--   writers   waiting writers' marks, field -> end
--   waiting   waiting readers' marks, field -> end
--   admitted  admissions' count, and admittedEnd their latest end
--   live      everything counted above
-- A dead holder stops holding within its lease, however long the others
-- renew theirs. It also sets 'nr', the count of read holds in the hash,
-- which a read grant raises and dropHold lowers: a read release that
-- leaves it above 0 knows other read holds are there, live or not yet
-- pruned, and need not read the whole hash (a write can wait for them).
local function prune(hash, now)
    local all = redis.call('hgetall', hash)
    local st = {readers = 0, last = 0, writers = {}, waiting = {}, admitted = 0, admittedEnd = 0, live = 0}
    local dead = {}
    for i = 1, #all, 2 do
        local f, ends = all[i], tonumber(all[i + 1])
        local hold = string.match(f, '^(.*)#exp$')
        local mark = string.match(f, '^(.*)#wait$')
        local admit = string.match(f, '#admit$')
        if hold and ends <= now then
            dropFields(hash, hold)
        elseif (mark or admit) and ends <= now then
            dead[#dead + 1] = f
        elseif hold then
            if string.sub(hold, -2) == ':w' then
                st.writer = hold
            else
                st.readers = st.readers + 1
            end
            st.last = math.max(st.last, ends)
            st.live = st.live + 1
        elseif mark then
            if string.sub(mark, -2) == ':w' then
                st.writers[f] = ends
            else
                st.waiting[f] = ends
            end
            st.live = st.live + 1
        elseif admit then
            st.admitted = st.admitted + 1
            st.admittedEnd = math.max(st.admittedEnd, ends)
            st.live = st.live + 1
        end
    end
    if st.writer == nil and redis.call('hexists', hash, 'w') == 1 then
        dead[#dead + 1] = 'w'
    end
    hdelAll(hash, dead)
    if st.readers > 0 then
        redis.call('hset', hash, 'nr', st.readers)
    else
        redis.call('hdel', hash, 'nr')
    end
    return st
end

-- admit turns the marks of the readers waiting in st into admissions
-- (B:r#admit, with the mark's end): a write release lets in the readers
-- that waited for it before any writer that waits now, so that writers
-- cannot starve readers either.
local function admit(hash, st)
    for f, ends in pairs(st.waiting) do
        redis.call('hset', hash, string.sub(f, 1, -6) .. '#admit', ends)
        redis.call('hdel', hash, f)
        st.admitted = st.admitted + 1
        st.admittedEnd = math.max(st.admittedEnd, ends)
    end
    st.waiting = {}
end

-- settleMarks writes 'wait' as the latest end of the waiting writers'
-- marks, or deletes it when no writer waits, and reports whether one does.
local function settleMarks(hash, marks)
    local latest = 0
    for _, ends in pairs(marks) do
        latest = math.max(latest, ends)
    end
    if latest > 0 then
        redis.call('hset', hash, 'wait', latest)
        return true
    end
    redis.call('hdel', hash, 'wait')
    return false
end

-- markWaiting records that the owner of field waits, refused with pttl: it
-- will try again within min(pttl, grace), so the mark lasts that plus
-- grace. It returns the pttl to answer.
local function markWaiting(hash, field, now, pttl, grace)
    pttl = math.min(pttl, grace)
    redis.call('hset', hash, field .. '#wait', now + pttl + grace)
    lengthen(hash, pttl + grace)
    return pttl
end

-- The steps every read-write acquire script takes first; KEYS and ARGV are
-- acquire.lua's.

-- grantNew gives the owner ARGV[1] a fresh hold, count 1, with its own
-- lease from now (marked when fixed: ARGV[10] '0'), and writes the
-- field-value pairs given; token is the hold's.
local function grantNew(now, token, ...)
    local hash, owner, lease = KEYS[1], ARGV[1], tonumber(ARGV[4])
    redis.call('hset', hash, owner, 1, owner .. '#seq', ARGV[2], owner .. '#exp', now + lease, 'mode', 'rw', ...)
    redis.call('hdel', hash, owner .. '#wait', owner .. '#admit')
    markFixed(hash, owner, ARGV[10] == '1')
    if ARGV[7] == '1' then
        redis.call('hset', hash, 'waiters', 1)
    end
    lengthen(hash, lease)
    fence(KEYS[3], owner, tonumber(ARGV[5]), ARGV[6])
    return {GRANTED, 1, token}
end

-- acquiring answers what an acquire can answer before its kind decides:
-- grant() on a fresh lock, a key type error, a stale copy, a re-entry of
-- a live hold (or NOT_HELD for one of a hold that is gone: hold.lua's
-- gone), or a refusal on a hash that is another kind of lock (a
-- Mutex of the same name: its holder is unknown). Otherwise it drops the
-- owner's own hold if its lease ended and returns nil and held: the
-- owner's field, #seq, #exp, 'mode', #fix, then the fields named. A
-- re-entry marks the hold anew (hold.lua's remark).
local function acquiring(now, grant, ...)
    local hash, fences, owner, seq = KEYS[1], KEYS[3], ARGV[1], tonumber(ARGV[2])
    local lease = tonumber(ARGV[4])
    if redis.call('exists', hash, fences) == 0 then
        return gone() or grant()
    end
    local htype, ftype = redis.call('type', hash).ok, redis.call('type', fences).ok
    if (htype ~= 'hash' and htype ~= 'none') or (ftype ~= 'hash' and ftype ~= 'none') then
        return redis.error_reply('WRONGTYPE lock key ' .. hash .. ' or ' .. fences .. ' is not a hash')
    end
    local held = redis.call('hmget', hash, owner, owner .. '#seq', owner .. '#exp', 'mode', owner .. '#fix', ...)
    if held[1] and tonumber(held[2]) >= seq then
        return {STALE, 0}
    end
    if held[1] and tonumber(held[3]) > now then
        local token, err = currentToken(KEYS[2])
        if not token then
            return err
        end
        redis.call('hset', hash, owner, ARGV[3], owner .. '#seq', seq)
        remark(hash, owner, held[5], ARGV[3])
        if tonumber(held[3]) < now + lease then
            redis.call('hset', hash, owner .. '#exp', now + lease)
        end
        lengthen(hash, lease)
        fence(fences, owner, tonumber(ARGV[5]), ARGV[6])
        return {GRANTED, tonumber(ARGV[3]), token}
    end
    if tonumber(redis.call('hget', fences, owner) or '0') >= seq then
        return {STALE, 0}
    end
    if held[1] then
        dropHold(hash, owner) -- its own lease ended
    end
    local lost = gone()
    if lost then
        return lost
    end
    if htype == 'hash' and held[4] ~= 'rw' then
        fence(fences, owner, tonumber(ARGV[5]), ARGV[6])
        redis.call('hset', hash, 'waiters', 1)
        return {REFUSED, redis.call('pttl', hash)}
    end
    return nil, held
end

-- The steps every read-write release script takes first; KEYS and ARGV are
-- release.lua's.

-- releasing answers what a release can answer before its kind decides: a
-- key that is not a hash, a stale copy, a level left, nothing to do. When
-- the owner's hold goes (or the mark or admission of an owner that gave up
-- waiting), it deletes it and returns nil, held (the owner's field, #seq,
-- #exp, 'waiters', #wait, #admit as they were), now, and whether the hold
-- was live.
local function releasing()
    local hash, fences, owner = KEYS[1], KEYS[3], ARGV[1]
    local seq, superseded = tonumber(ARGV[2]), tonumber(ARGV[5])
    local held = redis.pcall('hmget', hash, owner, owner .. '#seq', owner .. '#exp', 'waiters',
        owner .. '#wait', owner .. '#admit')
    if held.err then
        fence(fences, owner, superseded, ARGV[6])
        return {NOT_HELD, 0}
    end
    if held[1] and tonumber(held[2]) >= seq then
        return {STALE, 0}
    end
    if not held[1] and fencedUpTo(fences, owner, seq) then
        return {STALE, 0}
    end
    fence(fences, owner, superseded, ARGV[6])
    local now = nowMs()
    local left = math.min(tonumber(ARGV[3]), tonumber(held[1] or '0')) -- never raised (hold.lua's lower)
    local live = held[1] and tonumber(held[3]) > now
    if live and left > 0 then
        redis.call('hset', hash, owner, left, owner .. '#seq', seq)
        return {STILL_HELD, left}
    end
    if not live and not held[5] and not held[6] then
        if held[1] then
            dropHold(hash, owner) -- its own lease ended
        end
        return {NOT_HELD, 0}
    end
    if held[1] then
        dropHold(hash, owner)
    end
    redis.call('hdel', hash, owner .. '#wait', owner .. '#admit')
    return nil, held, now, live
end
