-- token: the fencing counter's helpers, for hold.lua, queue.lua, rw.lua
-- and the read-write lock's acquire scripts.
--
-- The counter starts from the server clock in microseconds whenever it is
-- missing (first acquire, or Redis lost it), so that tokens keep
-- increasing across an empty restart.

-- startToken sets the missing counter at key to the clock and returns it.
local function startToken(key)
    local now = redis.call('time')
    local t = tonumber(now[1]) * 1000000 + tonumber(now[2])
    redis.call('set', key, string.format('%d', t))
    return t
end

-- nextToken increments the counter at key and returns the new token; nil
-- and the error when the key is not a counter.
local function nextToken(key)
    local t = redis.pcall('incr', key)
    if type(t) == 'table' then
        return nil, t
    end
    if t == 1 then
        return startToken(key)
    end
    return t
end

-- readCounter returns the counter at key, or false when it is missing;
-- nil and the error when the key is not a counter. It writes nothing, so
-- a script can check the counter before its first write.
local function readCounter(key)
    local t = redis.pcall('get', key)
    if type(t) == 'table' then
        return nil, t
    end
    if not t then
        return false
    end
    local n = tonumber(t)
    if not n then
        return nil, redis.error_reply('ERR fencing counter ' .. key .. ' is not a number')
    end
    return n
end

-- currentToken returns the counter at key, the token of the latest first
-- acquire, starting it when it is missing; nil and the error when the key
-- is not a counter.
local function currentToken(key)
    local t, err = readCounter(key)
    if t == nil then
        return nil, err
    end
    return t or startToken(key)
end
