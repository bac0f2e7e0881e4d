package lua

import (
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlock/rlock/internal/redistest"
)

// failing.lua fails where ARGV[1] says: in its own lines, or in the helper
// it includes, boom.lua, by a Lua error or by a command Redis refuses.
var failingFiles = fstest.MapFS{
	"failing.lua": {Data: []byte(`#!lua
--@include boom.lua
-- failing: fails as ARGV[1] says.
local how = ARGV[1]
if how == 'body' then
    return missing.field -- line 6: a nonexistent global
elseif how == 'command' then
    return redis.call('incr', KEYS[1]) -- line 8
elseif how == 'reply' then
    return redis.error_reply('WRONGTYPE said by the script')
end
return boom(how, KEYS[1])
`)},
	"boom.lua": {Data: []byte(`-- boom: a helper that fails.

local function boom(how, key)
    if how == 'helper' then
        return nothing.here -- line 5: a nonexistent global
    end
    return redis.call('incr', key) -- line 7
end
`)},
}

var failingRuns atomic.Int64

// TestErrorNamesFileAndLine runs failing.lua, whose text has boom.lua put
// in after its shebang, and checks that each error Redis raises inside it
// names the file and line it comes from, whether sent by Exec (EVALSHA,
// then EVAL after NOSCRIPT) or by the EvalSHA and Eval builders and
// MapError; and that the error is still a *rueidis.RedisError, which
// callers tell from errors in transit.
func TestErrorNamesFileAndLine(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	// A script of its own per run: the first Exec finds it missing (NOSCRIPT).
	fsys := fstest.MapFS{"boom.lua": failingFiles["boom.lua"], "failing.lua": &fstest.MapFile{
		Data: fmt.Appendf(nil, "%s-- run %d\n", failingFiles["failing.lua"].Data, failingRuns.Add(1)),
	}}
	s, err := newScript(fsys, "failing.lua", once)
	require.NoError(t, err)
	key := "test:lua:failing:" + strings.ReplaceAll(t.Name(), "/", ":")
	require.NoError(t, rc.Do(t.Context(), rc.B().Set().Key(key).Value("not a number").Build()).Error())
	t.Cleanup(func() { rc.Do(t.Context(), rc.B().Del().Key(key).Build()) })

	cases := []struct {
		how, at, says string
	}{
		{"body", "lua/failing.lua:6", "nonexistent global variable 'missing'"},
		{"command", "lua/failing.lua:8", "value is not an integer"},
		{"helper", "lua/boom.lua:5", "nonexistent global variable 'nothing'"},
		{"helper command", "lua/boom.lua:7", "value is not an integer"},
	}
	check := func(t *testing.T, err error, at, says string) {
		t.Helper()
		require.Error(t, err)
		re, ok := rueidis.IsRedisErr(err)
		require.True(t, ok, "still a Redis error: %v", err)
		msg := re.Error()
		assert.Contains(t, msg, says)
		assert.Contains(t, msg, at, "names the file and line")
		assert.NotContains(t, msg, "user_script", "names no line of the spliced text")
		assert.Contains(t, msg, "script: lua/failing.lua "+s.SHA1(), "names the script")
	}
	for _, c := range cases {
		t.Run(c.how, func(t *testing.T) {
			check(t, s.Exec(t.Context(), rc, []string{key}, []string{c.how}).Error(), c.at, c.says)
			res := rc.Do(t.Context(), s.EvalSHA(rc.B(), []string{key}, []string{c.how}))
			check(t, s.MapError(res.Error()), c.at, c.says)
			res = rc.Do(t.Context(), s.Eval(rc.B(), []string{key}, []string{c.how}))
			check(t, s.MapError(res.Error()), c.at, c.says)
		})
	}

	t.Run("unmapped", func(t *testing.T) {
		err := s.Exec(t.Context(), rc, []string{key}, []string{"reply"}).Error()
		re, ok := rueidis.IsRedisErr(err)
		require.True(t, ok)
		assert.Equal(t, "WRONGTYPE said by the script", re.Error(), "an error the script returns has no line to map")
		assert.Same(t, err, s.MapError(err), "and is passed on as it is")
		assert.NoError(t, s.MapError(nil))
		other := fs.ErrNotExist
		assert.Same(t, other, s.MapError(other), "a Go error is passed on")
	})
}

// TestCompileErrorNamesFileAndLine: a script Redis cannot compile names
// the file and line too.
func TestCompileErrorNamesFileAndLine(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	s, err := newScript(fstest.MapFS{
		"broken.lua": {Data: []byte("#!lua\n--@include ok.lua\nlocal x = \nreturn x\n")},
		"ok.lua":     {Data: []byte("-- ok\n-- " + t.Name() + "\n")},
	}, "broken.lua", once)
	require.NoError(t, err)
	err = s.Exec(t.Context(), rc, nil, nil).Error()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lua/broken.lua:4:", "the line after the dangling '='")
	assert.NotContains(t, err.Error(), "user_script")
}

// TestRealScriptErrors makes two of the package's scripts fail in Redis,
// one in a helper it includes (renew.lua's lease.lua) and one in its own
// lines (force_release.lua), and checks that the error names the line of
// the file it comes from.
func TestRealScriptErrors(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	key := "test:lua:real:" + strings.ReplaceAll(t.Name(), "/", ":")
	t.Cleanup(func() { rc.Do(t.Context(), rc.B().Del().Key(key).Build()) })
	require.NoError(t, rc.Do(t.Context(), rc.B().Hset().Key(key).FieldValue().FieldValue("a", "1").Build()).Error())

	err := Renew.Exec(t.Context(), rc, []string{key}, []string{"not a lease", "a"}).Error()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "@lua/lease.lua:"+lineOf(t, "lease.lua", "redis.call('pexpire', key, ms, 'gt')"))

	err = ForceRelease.Exec(t.Context(), rc, []string{key, key + ":unlock", key + ":fence:c!1"}, []string{"nosuchcommand", "60000"}).Error()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "@lua/force_release.lua:"+lineOf(t, "force_release.lua", "redis.call(ARGV[1]"))
}

// lineOf returns the number of the line of the embedded file name that
// contains text.
func lineOf(t *testing.T, name, text string) string {
	t.Helper()
	f, err := readLuaFile(files, name)
	require.NoError(t, err)
	for i, l := range f.lines {
		if strings.Contains(l, text) {
			return fmt.Sprint(i + 1)
		}
	}
	t.Fatalf("%s has no line with %q", name, text)
	return ""
}
