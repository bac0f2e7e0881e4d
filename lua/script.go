package lua

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"regexp"
	"strconv"

	"github.com/redis/rueidis"
)

//go:embed *.lua
var files embed.FS

// Script is one Redis script of rlock: a .lua file with the helpers it
// includes, wrapped once in a *rueidis.Lua. Exec sends EVALSHA and falls
// back to EVAL when Redis answers NOSCRIPT (after a restart or SCRIPT
// FLUSH). EvalSHA and Eval build the same commands for callers that
// pipeline them with others. An error that Redis raises inside the script
// names a line of the text it ran; Exec, and MapError for the replies of
// the built commands, make it name the file and line it comes from
// (lua/hold.lua:12).
type Script struct {
	name  string
	src   spliced
	sha1  string
	sends sending
	lua   *rueidis.Lua
}

// sending is how a script may be sent.
type sending int

const (
	// once: the script changes state that a resend would change again (a
	// hold count): rueidis sends it once, and only rlock's request
	// protocol resends it, superseding the lost call.
	once sending = iota
	// retryable: the script is idempotent (owner-checked, or read-only),
	// so rueidis may resend it after a lost reply.
	retryable
	// readOnly: the script writes nothing and Redis may run it on a
	// replica: it goes as EVALSHA_RO, which rueidis may resend too.
	readOnly
)

// loaded is every script of the package, in the order loaded.
var loaded []*Script

// load returns the embedded script called name, sent as sends says. A
// script that cannot be assembled panics: at init, never at request time.
func load(name string, sends sending) *Script {
	s, err := newScript(files, name, sends)
	if err != nil {
		panic("lua: " + err.Error())
	}
	loaded = append(loaded, s)
	return s
}

// newScript assembles the script called name in fsys.
func newScript(fsys fs.FS, name string, sends sending) (*Script, error) {
	src, err := splice(fsys, name)
	if err != nil {
		return nil, err
	}
	sum := sha1.Sum([]byte(src.text))
	s := &Script{name: name, src: src, sha1: hex.EncodeToString(sum[:]), sends: sends}
	switch sends {
	case retryable:
		s.lua = rueidis.NewLuaScriptRetryable(src.text)
	case readOnly:
		s.lua = rueidis.NewLuaScriptReadOnly(src.text)
	default:
		s.lua = rueidis.NewLuaScript(src.text)
	}
	return s, nil
}

// Name returns the script's file name, such as "acquire.lua".
func (s *Script) Name() string { return s.name }

// Text returns the text Redis runs: the file with its helpers put in.
func (s *Script) Text() string { return s.src.text }

// SHA1 returns the hex SHA1 of Text, by which EVALSHA names the script.
func (s *Script) SHA1() string { return s.sha1 }

// Exec runs the script on keys and args through c: EVALSHA, then EVAL
// after NOSCRIPT. An error raised inside the script names the file and
// line it comes from; it is still a *rueidis.RedisError.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	res := s.lua.Exec(ctx, c, keys, args)
	if re, ok := rueidis.IsRedisErr(res.Error()); ok {
		if m, ok := s.mapped(re); ok {
			return rueidis.NewResult(m, nil)
		}
	}
	return res
}

// EvalSHA builds, with b, the EVALSHA (EVALSHA_RO for a read-only
// script) that runs the script on keys and args. It is not marked
// retryable: a caller that pipelines a retryable script's calls decides
// when rueidis may resend them (ToRetryable), as the watchdog does. Pass
// an error of its reply through MapError.
func (s *Script) EvalSHA(b rueidis.Builder, keys, args []string) rueidis.Completed {
	if s.sends == readOnly {
		return b.EvalshaRo().Sha1(s.sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return b.Evalsha().Sha1(s.sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// Eval builds the EVAL that replaces EvalSHA after Redis answered
// NOSCRIPT, not marked retryable either. Pass an error of its reply
// through MapError.
func (s *Script) Eval(b rueidis.Builder, keys, args []string) rueidis.Completed {
	if s.sends == readOnly {
		return b.EvalRo().Script(s.src.text).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return b.Eval().Script(s.src.text).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// MapError returns err, an error of a reply to the script (sent with
// EvalSHA or Eval), with the lines of the script's text that it names
// replaced by the file and line they come from. Any other error, nil
// included, is returned as it is.
func (s *Script) MapError(err error) error {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return err
	}
	m, ok := s.mapped(re)
	if !ok {
		return err
	}
	return m.Error()
}

// Redis names a line of the script it ran as user_script:<line> (both in
// "user_script:3: attempt to ..." and in "on @user_script:3."), and the
// script by its SHA1 ("script: <sha1>,").
var (
	scriptLine = regexp.MustCompile(`user_script:([0-9]+)`)
	scriptSHA  = regexp.MustCompile(`script: ([0-9a-f]{40})`)
)

// mapMessage returns msg with every line of the script's text it names
// replaced by lua/<file>:<line>, and the script's SHA1 by its file.
func (s *Script) mapMessage(msg string) string {
	msg = scriptLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(m[len("user_script:"):])
		if err != nil {
			return m
		}
		file, line, ok := s.src.locate(n)
		if !ok {
			return m
		}
		return "lua/" + file + ":" + strconv.Itoa(line)
	})
	return scriptSHA.ReplaceAllStringFunc(msg, func(m string) string {
		if m[len("script: "):] != s.sha1 {
			return m
		}
		return "script: lua/" + s.name + " " + s.sha1
	})
}

// mapped returns the Redis error message re with its lines mapped (see
// mapMessage); ok is false when there is nothing to map.
//
// The message stays a *rueidis.RedisError, not a Go error wrapping one:
// callers tell the errors Redis answered from those in transit with
// rueidis.IsRedisErr, which does not unwrap, and a call that Redis
// answered must never be taken for one whose outcome is unknown. rueidis
// has no constructor for one; its cache serialisation is the one way to
// make a message, so mapped rebuilds re's serialisation with the new text,
// after checking that it ends in the text and its 8-byte length. If a
// rueidis release changes that, the error is left unmapped
// (TestMappedErrorIsRedisError fails).
func (s *Script) mapped(re *rueidis.RedisError) (rueidis.RedisMessage, bool) {
	old := re.Error()
	msg := s.mapMessage(old)
	if msg == old {
		return rueidis.RedisMessage{}, false
	}
	b := (*rueidis.RedisMessage)(re).CacheMarshal(nil)
	head := len(b) - len(old) - 8
	if head < 0 || string(b[head+8:]) != old || binary.BigEndian.Uint64(b[head:head+8]) != uint64(len(old)) {
		return rueidis.RedisMessage{}, false
	}
	out := make([]byte, 0, head+8+len(msg))
	out = append(out, b[:head]...)
	out = binary.BigEndian.AppendUint64(out, uint64(len(msg)))
	out = append(out, msg...)
	var m rueidis.RedisMessage
	if m.CacheUnmarshalView(out) != nil {
		return rueidis.RedisMessage{}, false
	}
	if e, ok := rueidis.IsRedisErr(m.Error()); !ok || e.Error() != msg {
		return rueidis.RedisMessage{}, false
	}
	return m, true
}
