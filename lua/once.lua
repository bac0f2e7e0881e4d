--@include fence.lua
-- once: a write that no owner's turn orders (ForceUnlock, a semaphore's
-- permits set or changed, a travelling permit extended, a latch's count
-- set) runs at most once, and never after its caller has its answer. The
-- Client names each call ('<clientID>!<seq>') and sends it once. The call
-- keeps its reply under its name in the resource's fences hash; when the
-- reply does not come, the Client voids the name (void.lua): a call that
-- reaches Redis after that finds the name taken and does nothing, and the
-- reply kept by one that ran before is the caller's answer. Names live
-- as long as the fences do: the fence life, which outlasts a late copy.

-- voided reports whether the call named name was voided (or, which never
-- happens, ran already): it must do nothing.
local function voided(fences, name)
    return redis.call('hexists', fences, name) == 1
end

-- answered keeps reply, a number or false, as the call's answer under its
-- name, for the fence life in ms, and returns it.
local function answered(fences, name, life, reply)
    redis.call('hset', fences, name, reply == false and 'nil' or reply)
    keepFences(fences, life)
    return reply
end
