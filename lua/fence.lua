-- fence: the give-up fences of the request protocol, for every acquire,
-- release and count-down script (directly, or through hold.lua and
-- rw.lua).
--
-- fence records, for life ms, that no call of owner with a seq up to
-- superseded may apply any more: a copy of a call that a later call
-- superseded may still reach Redis after it. The fences hash holds one
-- field per owner whose reply was lost lately, never one per call, and it
-- expires. A fences key that is not a hash (overwritten) is left alone.
local function fence(fences, owner, superseded, life)
    if superseded <= 0 then
        return
    end
    local t = redis.call('type', fences).ok
    if t ~= 'hash' and t ~= 'none' then
        return
    end
    if tonumber(redis.call('hget', fences, owner) or '0') < superseded then
        redis.call('hset', fences, owner, superseded)
    end
    if redis.call('pttl', fences) < tonumber(life) then
        redis.call('pexpire', fences, life)
    end
end

-- staleCall reports whether a call of owner with seq is a copy of one that a
-- later call superseded: owner's latest applied call (last) or its fence
-- is at seq or above.
local function staleCall(fences, owner, last, seq)
    return last >= seq or tonumber(redis.call('hget', fences, owner) or '0') >= seq
end

-- fencedUpTo reports whether owner's fence stops its calls up to seq: a
-- later call superseded them. A fences key that is not a hash stops
-- nothing.
local function fencedUpTo(fences, owner, seq)
    local f = redis.pcall('hget', fences, owner)
    return type(f) == 'string' and tonumber(f) >= seq
end

-- hashTypes returns hash's type ('hash' or 'none'), or nil and the error
-- reply a request answers when hash or fences holds something other than
-- a hash (something other than rlock wrote it); what names the primitive.
local function hashTypes(what, hash, fences)
    local h, f = redis.call('type', hash).ok, redis.call('type', fences).ok
    if (h ~= 'hash' and h ~= 'none') or (f ~= 'hash' and f ~= 'none') then
        return nil, redis.error_reply('WRONGTYPE ' .. what .. ' key ' .. hash .. ' or ' .. fences .. ' is not a hash')
    end
    return h
end
