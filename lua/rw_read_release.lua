#!lua flags=allow-oom
--@include codes.lua
--@include rw.lua
-- rw read release: set one owner's read hold count lower, exactly once.
-- KEYS, ARGV and the reply ({NOT_HELD, 0}, {STILL_HELD, count}, {FREED,
-- 0}, {STALE, 0}) are release.lua's (ARGV[1] is the owner's read field,
-- B:r); see rw.lua for the hash.
--
-- At count 0 the read hold goes; while other read holds are in the hash
-- ('nr', see rw.lua's prune) and nobody waits, nothing else is to be done.
-- ('nr' counts holds whose own lease ended and that no prune dropped yet:
-- with a writer waiting, the release prunes to learn whether it was the
-- last live one.) When it was the
-- last live read hold (and
-- no admitted reader is still to come), the hash goes too unless a hold,
-- mark or admission lives, and if anyone waits the channel is told 'all'
-- (pubsub.WakeAll): a waiting writer may now write. (All, not one: the
-- local queue of a Client mixes readers, which a waiting writer still
-- holds back, with writers.) A caller that does not hold the lock (a
-- reader that gave up waiting) gets {NOT_HELD, 0}, and its mark or admission is
-- removed.
local hash = KEYS[1]
local reply, held, now, live = releasing()
if reply then
    return reply
end
if live and not held[4] and tonumber(redis.call('hget', hash, 'nr') or '0') > 0 then
    return {FREED, 0} -- other read holds are there, and nobody waits: nothing more to do
end
local st = prune(hash, now)
if st.live == 0 then
    redis.call('del', hash)
end
if held[4] and (live or held[6]) and st.readers == 0 and st.admitted == 0 then
    redis.call(ARGV[4], KEYS[2], 'all')
end
if live then
    return {FREED, 0}
end
return {NOT_HELD, 0}
