#!lua flags=allow-oom
-- void: settle a call of once.lua whose reply never came: it runs no more,
-- and its answer, if it ran, is told.
--
-- KEYS[1] the call's answer key   <fences key>:<C>!<seq>
-- ARGV[1] fence life in ms
--
-- Reply (a string): 'void' when the call had not run and now never will;
-- else its kept answer: a number, or 'nil'. allow-oom: a call must be
-- settled when Redis is at maxmemory.
redis.call('set', KEYS[1], 'void', 'nx', 'px', ARGV[1])
return redis.call('get', KEYS[1])
