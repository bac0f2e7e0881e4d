-- client: the Client an owner field belongs to, for waiting.lua (a
-- Mutex's waiting Clients) and queue.lua (a fair lock's queue).

-- clientOf is the Client id of owner field f (<clientID>:<ownerToken>).
local function clientOf(f)
    return string.match(f, '^[^:]*')
end
