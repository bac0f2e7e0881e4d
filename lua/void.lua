#!lua flags=allow-oom
--@include fence.lua
-- void: settle a call of once.lua whose reply never came: it runs no more,
-- and its answer, if it ran, is told.
--
-- KEYS[1] fences            the resource's fences hash
-- ARGV[1] the call's name   '<clientID>!<seq>'
-- ARGV[2] fence life in ms
--
-- Reply (a string): 'void' when the call had not run and now never will;
-- else its kept answer: a number, or 'nil'. allow-oom: a call must be
-- settled when Redis is at maxmemory.
local fences, name = KEYS[1], ARGV[1]
if redis.call('hsetnx', fences, name, 'void') == 1 then
    keepFences(fences, ARGV[2])
end
return redis.call('hget', fences, name)
