#!lua flags=no-writes
--@include lease.lua
-- rw state: what a read-write lock's hash holds now, for inspection; it
-- writes nothing. See rw.lua for the hash.
--
-- KEYS[1] lock hash    P{N}
-- ARGV[1] owner field  B, without a kind's suffix ('' for none)
--
-- Reply (numbers, not codes): {write held (0/1), live read holds,
--         ms until the last live hold ends (0: none),
--         B's read count, B's write count}
-- Holds whose own lease ended count for nothing.
local now = nowMs()
local all = redis.pcall('hgetall', KEYS[1])
if all.err then
    return redis.error_reply('WRONGTYPE lock key ' .. KEYS[1] .. ' is not a hash')
end
local fields = {}
for i = 1, #all, 2 do
    fields[all[i]] = all[i + 1]
end
local write, readers, last, mine = 0, 0, 0, {}
for f, v in pairs(fields) do
    local hold = string.match(f, '^(.*)#exp$')
    local ends = tonumber(v)
    if hold and ends > now and fields[hold] then
        if string.sub(hold, -2) == ':w' then
            write = 1
        else
            readers = readers + 1
        end
        last = math.max(last, ends)
        mine[hold] = tonumber(fields[hold])
    end
end
local owner = ARGV[1]
return {write, readers, math.max(last - now, 0),
    owner ~= '' and mine[owner .. ':r'] or 0, owner ~= '' and mine[owner .. ':w'] or 0}
