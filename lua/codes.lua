-- codes: the reply codes of the scripts of the request protocol (every
-- acquire, every release, the latch's count-down). Their replies are
-- arrays whose first element is one of these codes, and each code means
-- one thing in every script: STALE is STALE everywhere. Package lua's Code
-- constants have the same names (GRANTED is Granted) and numbers; a test
-- checks that they match. Scripts outside the protocol answer plain
-- numbers (booleans, counts), never these codes.
--
-- The numbers are the first ones acquire.lua ever answered, kept, and new
-- ones for the rest.
local REFUSED = 0     -- {REFUSED, pttl}: not taken: another owner holds it,
                      -- or no permit is free; pttl bounds the wait
local GRANTED = 1     -- {GRANTED, count, token}: taken or re-entered: the
                      -- owner holds count levels, under fencing token
local STALE = 2       -- {STALE, 0}: a copy of a call that a later call of the
                      -- same owner superseded; nothing was done
local NOT_HELD = 3    -- {NOT_HELD, 0}: a release of an owner that holds
                      -- nothing (any more)
local STILL_HELD = 4  -- {STILL_HELD, count}: released down to count > 0 levels
local FREED = 5       -- {FREED, 0}: released down to 0: the owner holds
                      -- nothing any more
local COUNTED = 6     -- {COUNTED, count}: the request counted the latch
                      -- down; count is what is left
local NOT_COUNTED = 7 -- {NOT_COUNTED, count}: the request did not count:
                      -- the latch was at 0, or (settling) no call of it ran
local RAN = 8         -- {RAN, results}: the holder's commands ran (do.lua);
                      -- results has one reply or error per command
local RAN_EARLIER = 9 -- {RAN_EARLIER, 0}: a call of the request whose reply
                      -- was lost ran the commands; they did not run again
local NOT_RUN = 10    -- {NOT_RUN, 0}: (settling) no call of the request ran
                      -- the commands, and none will
local HANDED = 11     -- {HANDED, token}: released down to 0 and handed, in
                      -- the same call, to a waiter of the releasing
                      -- owner's Client, which holds it under token
