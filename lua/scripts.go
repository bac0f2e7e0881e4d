package lua

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strings"

	"github.com/redis/rueidis"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed fence.lua
	fenceSrc string
	//go:embed force_release.lua
	forceReleaseSrc string
	//go:embed renew.lua
	renewSrc string
)

// withFence returns script with fence.lua put in after its first line, the
// shebang that Redis needs first.
func withFence(script string) string {
	shebang, body, _ := strings.Cut(script, "\n")
	return shebang + "\n" + fenceSrc + body
}

// Acquire takes or re-enters a lock; see acquire.lua for KEYS, ARGV and reply.
var Acquire = rueidis.NewLuaScript(withFence(acquireSrc))

// AcquireSource is acquire.lua for callers that must send it in a pipeline
// of their own rather than through Acquire.Exec: the replica-acknowledged
// acquire sends it and WAIT down one connection.
var AcquireSource = newSource(withFence(acquireSrc))

// Release sets an owner's hold count lower, freeing the lock at 0; see
// release.lua.
var Release = rueidis.NewLuaScript(withFence(releaseSrc))

// ForceRelease deletes a lock whoever holds it; see force_release.lua.
var ForceRelease = rueidis.NewLuaScript(forceReleaseSrc)

// Renew extends the leases of a batch of holds in one Cluster slot; see renew.lua.
var Renew = rueidis.NewLuaScriptRetryable(renewSrc)

// RenewSource is renew.lua for the watchdog, which pipelines many batches
// itself: EVALSHA first, EVAL only for batches answered NOSCRIPT.
var RenewSource = newSource(renewSrc)

// Source is a script's text and the SHA1 that EVALSHA names it by.
type Source struct {
	Text string
	SHA1 string
}

func newSource(text string) Source {
	sum := sha1.Sum([]byte(text))
	return Source{Text: text, SHA1: hex.EncodeToString(sum[:])}
}

// EvalSHA builds, with b, the EVALSHA that runs the script on keys and args.
func (s Source) EvalSHA(b rueidis.Builder, keys, args []string) rueidis.Completed {
	return b.Evalsha().Sha1(s.SHA1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// Eval builds the EVAL that replaces EvalSHA after Redis answered NOSCRIPT.
func (s Source) Eval(b rueidis.Builder, keys, args []string) rueidis.Completed {
	return b.Eval().Script(s.Text).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}
