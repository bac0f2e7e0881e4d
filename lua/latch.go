package lua

import (
	_ "embed"

	"github.com/redis/rueidis"
)

var (
	//go:embed latch_countdown.lua
	latchCountDownSrc string
	//go:embed latch_set.lua
	latchSetSrc string
)

// LatchCountDown counts a latch down once per request, under the request
// protocol's sequence numbers and fences (see latch_countdown.lua).
var LatchCountDown = rueidis.NewLuaScript(withFence(latchCountDownSrc))

// LatchSet sets a latch's count when it is 0 or unset (see latch_set.lua).
var LatchSet = rueidis.NewLuaScript(latchSetSrc)
