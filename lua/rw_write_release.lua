#!lua flags=allow-oom
--@include codes.lua
--@include rw.lua
-- rw write release: set one owner's write hold count lower, exactly once,
-- or take back the waiting mark of a writer that gave up. KEYS, ARGV and
-- the reply ({NOT_HELD, 0}, {STILL_HELD, count}, {FREED, 0}, {STALE, 0})
-- are release.lua's (ARGV[1] is the owner's write field, B:w); see rw.lua
-- for the hash.
--
-- At count 0 the write hold goes, and the readers waiting then are admitted
-- ahead of the writers waiting (rw.lua's admit); the hash goes unless other
-- holds, marks or admissions live (the owner's own read hold, after a
-- downgrade). If anyone waits, the channel is told 'all' (pubsub.WakeAll):
-- every waiting reader may now read, or a writer write. A caller that does not hold the
-- lock (a writer that gave up waiting, or whose hold ended) gets {NOT_HELD, 0}
-- and its waiting mark is removed; readers it held back are woken.
local hash = KEYS[1]
local reply, held, now, freed = releasing()
if reply then
    return reply
end
local st = prune(hash, now)
settleMarks(hash, st.writers)
if freed then
    admit(hash, st)
end
if st.live == 0 then
    redis.call('del', hash)
end
if held[4] and not st.writer then
    redis.call(ARGV[4], KEYS[2], 'all')
end
if freed then
    return {FREED, 0}
end
return {NOT_HELD, 0}
