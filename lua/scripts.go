package lua

import (
	_ "embed"

	"github.com/redis/rueidis"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed force_release.lua
	forceReleaseSrc string
	//go:embed renew.lua
	renewSrc string
)

// Acquire takes or re-enters a lock; see acquire.lua for KEYS, ARGV and reply.
var Acquire = rueidis.NewLuaScript(acquireSrc)

// Release leaves one level of a lock; see release.lua.
var Release = rueidis.NewLuaScript(releaseSrc)

// ForceRelease deletes a lock whoever holds it; see force_release.lua.
var ForceRelease = rueidis.NewLuaScript(forceReleaseSrc)

// Renew extends the leases of a batch of holds in one Cluster slot; see renew.lua.
var Renew = rueidis.NewLuaScriptRetryable(renewSrc)
