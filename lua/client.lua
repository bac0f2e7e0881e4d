-- client: the Client an owner field belongs to, and its inbox, for
-- waiting.lua (a Mutex's waiting Clients) and queue.lua (a fair lock's
-- queue).

-- clientOf is the Client id of owner field f (<clientID>:<ownerToken>).
local function clientOf(f)
    return string.match(f, '^[^:]*')
end

-- inboxOf is the channel on which a message about channel addressed to
-- the Client of f (an owner field, or a Client id) goes: only that Client
-- listens there (pubsub.Inbox), where every Client with waiters listens
-- on channel.
local function inboxOf(channel, f)
    return channel .. '@' .. clientOf(f)
end
