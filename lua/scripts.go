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
	//go:embed token.lua
	tokenSrc string
	//go:embed inspect.lua
	inspectSrc string
	//go:embed hold.lua
	holdSrc string
	//go:embed queue.lua
	queueSrc string
	//go:embed fair_acquire.lua
	fairAcquireSrc string
	//go:embed fair_release.lua
	fairReleaseSrc string
	//go:embed lease.lua
	leaseSrc string
)

// withHelpers returns script with lease.lua and then the helper files put
// in after its first line, the shebang that Redis needs first, in the
// order given (a helper may call those before it), so that each script
// stays one script.
func withHelpers(script string, helpers ...string) string {
	shebang, body, _ := strings.Cut(script, "\n")
	return shebang + "\n" + leaseSrc + strings.Join(helpers, "") + body
}

// withFence returns script with fence.lua put in after its shebang.
func withFence(script string) string {
	return withHelpers(script, fenceSrc)
}

// acquireText is acquire.lua with the helpers it calls.
var acquireText = withHelpers(acquireSrc, fenceSrc, tokenSrc, holdSrc)

// Acquire takes or re-enters a lock; see acquire.lua for KEYS, ARGV and reply.
var Acquire = rueidis.NewLuaScript(acquireText)

// AcquireSource is acquire.lua for callers that must send it in a pipeline
// of their own rather than through Acquire.Exec: the replica-acknowledged
// acquire sends it and WAIT down one connection.
var AcquireSource = newSource(acquireText)

// Release sets an owner's hold count lower, freeing the lock at 0; see
// release.lua.
var Release = rueidis.NewLuaScript(withHelpers(releaseSrc, fenceSrc, holdSrc))

// FairAcquire is Acquire for a fair lock, which queues its waiters; see
// fair_acquire.lua.
var FairAcquire = rueidis.NewLuaScript(withHelpers(fairAcquireSrc, fenceSrc, tokenSrc, holdSrc, queueSrc))

// FairAcquireSource is fair_acquire.lua as AcquireSource is acquire.lua.
var FairAcquireSource = newSource(withHelpers(fairAcquireSrc, fenceSrc, tokenSrc, holdSrc, queueSrc))

// FairRelease is Release for a fair lock: at 0 it hands the lock over to
// the next waiter; see fair_release.lua.
var FairRelease = rueidis.NewLuaScript(withHelpers(fairReleaseSrc, fenceSrc, tokenSrc, holdSrc, queueSrc))

// ForceRelease deletes a lock whoever holds it; see force_release.lua.
var ForceRelease = rueidis.NewLuaScript(forceReleaseSrc)

// renewText is renew.lua with lease.lua.
var renewText = withHelpers(renewSrc)

// Renew extends the leases of a batch of holds in one Cluster slot; see renew.lua.
var Renew = rueidis.NewLuaScriptRetryable(renewText)

// RenewSource is renew.lua for the watchdog, which pipelines many batches
// itself: EVALSHA first, EVAL only for batches answered NOSCRIPT.
var RenewSource = newSource(renewText)

// Inspect reads a snapshot of one lock for operators, writing nothing; see
// inspect.lua.
var Inspect = rueidis.NewLuaScriptReadOnly(withHelpers(inspectSrc))

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
