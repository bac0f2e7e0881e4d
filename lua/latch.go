package lua

// LatchCountDown counts a latch down once per request, under the request
// protocol's sequence numbers and fences (see latch_countdown.lua).
var LatchCountDown = load("latch_countdown.lua", once)

// LatchSet sets a latch's count when it is 0 or unset, once per call
// (once.lua; see latch_set.lua).
var LatchSet = load("latch_set.lua", once)
