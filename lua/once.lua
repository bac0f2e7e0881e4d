-- once: a write that no owner's turn orders (ForceUnlock, a semaphore's
-- permits set or changed, a travelling permit extended, a latch's count
-- set) runs at most once, and never after its caller has its answer. The
-- Client names each call ('<C>!<seq>') and sends it once, with the key
-- its answer is kept under: the resource's fences key, ':' and the name,
-- in the resource's slot. When the reply does not come, the Client voids
-- that key (void.lua): a call that reaches Redis after that finds it and
-- does nothing, and the answer kept by one that ran before is the
-- caller's. The key expires after the fence life, which outlasts a late
-- copy; each call has its own, so no key grows with the calls.

-- voided reports whether the call whose answer key is answer was voided:
-- it must do nothing.
local function voided(answer)
    return redis.call('exists', answer) == 1
end

-- answered keeps reply, a number or false, as the call's answer for the
-- fence life in ms, and returns it.
local function answered(answer, life, reply)
    redis.call('set', answer, reply == false and 'nil' or reply, 'px', life)
    return reply
end
