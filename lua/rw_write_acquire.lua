#!lua
--@include codes.lua
--@include lease.lua
--@include fence.lua
--@include token.lua
--@include rw.lua
-- rw write acquire: take or re-enter the write hold of a read-write lock
-- for one owner, exactly once. KEYS, ARGV and the reply ({GRANTED, count,
-- token}, {REFUSED, pttl}, {STALE, 0}, {NOT_HELD, 0}) are acquire.lua's
-- (ARGV[1] is the owner's write field, B:w); see rw.lua for the hash.
--
-- Granted when no other owner holds the lock, read or write, and no reader
-- that a write release admitted is still to come in (see rw.lua's admit),
-- or as a re-entry. The token is a new one from the counter (a
-- re-entry's: the counter's value). A refused writer that waits (ARGV[7]
-- '1') leaves a waiting mark, B:w#wait, so that new readers are refused
-- while it waits: no writer starvation. Its reply {REFUSED, pttl} bounds the
-- caller's sleep before it tries again, and so refreshes the mark, by half
-- the lease: the mark lasts pttl + half the lease, longer than that sleep,
-- and a writer that died while waiting stops holding readers back within
-- one lease. Taking the lock, or a release by the writer that gave up
-- waiting (rw_write_release.lua), removes the mark.
local hash, owner, lease = KEYS[1], ARGV[1], tonumber(ARGV[4])
local markField = owner .. '#wait'
local grace = math.max(math.floor(lease / 2), 1)
local now = nowMs()

-- take grants the write hold; writers are the other writers' marks.
local function take(writers)
    local token, err = nextToken(KEYS[2])
    if not token then
        return err
    end
    writers[markField] = nil
    if settleMarks(hash, writers) then
        redis.call('hset', hash, 'waiters', 1)
    end
    return grantNew(now, token, 'w', owner)
end

local reply = acquiring(now, function() return take({}) end)
if reply then
    return reply
end

-- Its own expired hold went above; the other dead ones go here. Readers a
-- write release admitted come first.
local st = prune(hash, now)
if st.readers == 0 and not st.writer and st.admitted == 0 then
    return take(st.writers)
end
fence(KEYS[3], owner, tonumber(ARGV[5]), ARGV[6])
redis.call('hset', hash, 'waiters', 1)
local pttl = math.max(st.last, st.admittedEnd) - now
if ARGV[7] ~= '1' then
    return {REFUSED, pttl} -- a single attempt leaves no mark
end
pttl = markWaiting(hash, owner, now, pttl, grace)
st.writers[markField] = now + pttl + grace
settleMarks(hash, st.writers)
return {REFUSED, pttl}
