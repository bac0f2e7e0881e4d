package lua

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests need no Redis: they read the .lua files and the Go source.

// TestCodesMatchLua checks that codes.lua and the Code constants of
// codes.go are one table: the same names (GRANTED is Granted), numbers and
// order, and that no two codes share a number.
func TestCodesMatchLua(t *testing.T) {
	src, err := fs.ReadFile(files, "codes.lua")
	require.NoError(t, err)
	type code struct {
		name  string
		value int64
	}
	var inLua []code
	for _, m := range regexp.MustCompile(`(?m)^local ([A-Z_]+) = (-?[0-9]+)`).FindAllStringSubmatch(string(src), -1) {
		n, err := strconv.ParseInt(m[2], 10, 64)
		require.NoError(t, err)
		inLua = append(inLua, code{camel(m[1]), n})
		assert.Equal(t, m[1], Code(n).String(), "Code(%d).String() is its name in codes.lua", n)
	}

	file, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	require.NoError(t, err)
	var inGo []code
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			require.Len(t, v.Values, 1, "%s has a literal value", v.Names[0])
			lit, ok := v.Values[0].(*ast.BasicLit)
			require.True(t, ok, "%s has a literal value", v.Names[0])
			n, err := strconv.ParseInt(lit.Value, 10, 64)
			require.NoError(t, err)
			inGo = append(inGo, code{v.Names[0].Name, n})
		}
	}
	require.NotEmpty(t, inLua)
	assert.Equal(t, inLua, inGo, "codes.lua and codes.go list the same codes")
	seen := map[int64]string{}
	for _, c := range inGo {
		assert.NotContains(t, seen, c.value, "%s and %s share a number", seen[c.value], c.name)
		seen[c.value] = c.name
	}
	assert.Equal(t, "Code(99)", Code(99).String())
}

// camel turns a Lua constant's name into its Go name: NOT_HELD, NotHeld.
func camel(name string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(name, "_") {
		b.WriteString(part[:1] + strings.ToLower(part[1:]))
	}
	return b.String()
}

// luaSource is a .lua file read for the include checks: its code without
// comments and string literals, and its names.
type luaSource struct {
	file *luaFile
	code string          // comments and string literals blanked
	defs map[string]bool // top-level locals a helper defines for others
	own  map[string]bool // every local it defines, at any level
}

var (
	stringLiteral = regexp.MustCompile(`'[^'\n]*'|"[^"\n]*"`)
	lineComment   = regexp.MustCompile(`--[^\n]*`)
	topLevelDef   = regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
	anyDef        = regexp.MustCompile(`local (?:function )?([A-Za-z_][A-Za-z0-9_, ]*)`)
	identifier    = regexp.MustCompile(`[.:]?\b[A-Za-z_][A-Za-z0-9_]*\b`)
)

func readLuaSources(t *testing.T) map[string]*luaSource {
	names, err := fs.Glob(files, "*.lua")
	require.NoError(t, err)
	out := map[string]*luaSource{}
	for _, name := range names {
		f, err := readLuaFile(files, name)
		require.NoError(t, err)
		code := strings.Join(f.lines, "\n")
		code = lineComment.ReplaceAllString(stringLiteral.ReplaceAllString(code, "''"), "")
		s := &luaSource{file: f, code: code, defs: map[string]bool{}, own: map[string]bool{}}
		if !f.script {
			for _, m := range topLevelDef.FindAllStringSubmatch(code, -1) {
				s.defs[m[1]] = true
			}
		}
		for _, m := range anyDef.FindAllStringSubmatch(code, -1) {
			for n := range strings.SplitSeq(m[1], ",") {
				s.own[strings.TrimSpace(n)] = true
			}
		}
		out[name] = s
	}
	return out
}

// uses returns the names s uses that helper h defines.
func (s *luaSource) uses(h *luaSource) []string {
	var used []string
	for _, id := range identifier.FindAllString(s.code, -1) {
		if strings.ContainsAny(id[:1], ".:") || s.own[id] || !h.defs[id] || slices.Contains(used, id) {
			continue
		}
		used = append(used, id)
	}
	return used
}

// TestIncludesAreExact checks that every .lua file names, with
// --@include, exactly the helpers whose names it uses: none missing (which
// Redis would report as a nonexistent global, at request time), none it
// does not use. A script gets the helpers it names, and theirs.
func TestIncludesAreExact(t *testing.T) {
	sources := readLuaSources(t)
	defined := map[string]string{}
	for name, s := range sources {
		for d := range s.defs {
			require.NotContains(t, defined, d, "%s and %s both define %s", name, defined[d], d)
			defined[d] = name
		}
	}
	for name, s := range sources {
		var need []string
		for hname, h := range sources {
			if hname != name && len(s.uses(h)) > 0 {
				need = append(need, hname)
			}
		}
		slices.Sort(need)
		named := slices.Sorted(slices.Values(s.file.includes))
		assert.Equal(t, need, named, "%s includes the helpers whose names it uses", name)
	}
}

// TestEveryFileIsLoaded checks that every .lua file is a script of the
// package or a helper one of them includes, and that every script opens
// with a shebang and every helper does not.
func TestEveryFileIsLoaded(t *testing.T) {
	names, err := fs.Glob(files, "*.lua")
	require.NoError(t, err)
	reached := map[string]bool{}
	for _, s := range loaded {
		assert.False(t, reached[s.name], "%s is loaded once", s.name)
		reached[s.name] = true
		for _, sp := range s.src.spans {
			reached[sp.file] = true
		}
	}
	for _, name := range names {
		assert.True(t, reached[name], "%s is a script or a helper a script includes", name)
	}
}

// codeName matches the names of codes.lua.
var codeName = regexp.MustCompile(`\b(REFUSED|GRANTED|STALE|NOT_HELD|STILL_HELD|FREED|NOT_COUNTED|COUNTED|RAN_EARLIER|RAN|NOT_RUN)\b`)

// TestHeadersNameCodes checks that the header comment of every script
// names each code its own lines answer, and no code that neither it nor a
// helper it includes can answer.
func TestHeadersNameCodes(t *testing.T) {
	sources := readLuaSources(t)
	for _, s := range loaded {
		src := sources[s.name]
		var header strings.Builder
		for _, l := range src.file.lines[1+len(src.file.includes):] {
			if !strings.HasPrefix(l, "--") {
				break
			}
			header.WriteString(l + "\n")
		}
		named := set(codeName.FindAllString(header.String(), -1))
		own := set(codeName.FindAllString(src.code, -1))
		reachable := maps.Clone(own)
		for _, sp := range s.src.spans {
			if sp.file != s.name {
				for c := range set(codeName.FindAllString(sources[sp.file].code, -1)) {
					reachable[c] = true
				}
			}
		}
		for c := range own {
			assert.True(t, named[c], "%s answers %s: its header names it", s.name, c)
		}
		for c := range named {
			assert.True(t, reachable[c], "%s's header names %s, which it cannot answer", s.name, c)
		}
	}
}

func set(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

// TestLineMap checks, for every script, that each line of the text Redis
// runs is the line of the file that locate names.
func TestLineMap(t *testing.T) {
	for _, s := range loaded {
		lines := strings.Split(strings.TrimSuffix(s.Text(), "\n"), "\n")
		for i, l := range lines {
			file, at, ok := s.src.locate(i + 1)
			require.True(t, ok, "%s: line %d is located", s.name, i+1)
			f, err := readLuaFile(files, file)
			require.NoError(t, err)
			require.LessOrEqual(t, at, len(f.lines), "%s: line %d is within %s", s.name, i+1, file)
			if l != "" { // else a helper function the script does not use (prune.go)
				require.Equal(t, f.lines[at-1], l, "%s: line %d is %s:%d", s.name, i+1, file, at)
			}
		}
		_, _, ok := s.src.locate(len(lines) + 1)
		assert.False(t, ok, "%s: no line past the end", s.name)
	}
}

// testFiles are scripts and helpers for the loader's tests.
var testFiles = fstest.MapFS{
	"s.lua":       {Data: []byte("#!lua\n--@include a.lua\n--@include b.lua\n-- s\nreturn a() + b()\n")},
	"a.lua":       {Data: []byte("--@include b.lua\n-- a\nlocal function a() return b() end\n")},
	"b.lua":       {Data: []byte("-- b\nlocal function b() return 1 end\n")},
	"missing.lua": {Data: []byte("#!lua\n--@include nope.lua\nreturn 1\n")},
	"cycle.lua":   {Data: []byte("#!lua\n--@include c1.lua\nreturn 1\n")},
	"c1.lua":      {Data: []byte("--@include c2.lua\n")},
	"c2.lua":      {Data: []byte("--@include c1.lua\n")},
	"late.lua":    {Data: []byte("#!lua\n-- header\n--@include b.lua\nreturn 1\n")},
	"twice.lua":   {Data: []byte("#!lua\n--@include b.lua\n--@include b.lua\nreturn 1\n")},
	"script.lua":  {Data: []byte("#!lua\n--@include s.lua\nreturn 1\n")},
	"helper.lua":  {Data: []byte("return 1\n")},
	"prune.lua":   {Data: []byte("#!lua\n--@include p.lua\n-- not named here: unused, dead\nreturn used()\n")},
	"p.lua": {Data: []byte("-- p\nlocal function inner()\n    return 1\nend\n" +
		"local function used()\n    return inner()\nend\nlocal function unused()\n    return dead()\nend\n" +
		"local function dead() return 2 end\nlocal k = 3\n")},
	"unended.lua": {Data: []byte("#!lua\n--@include u.lua\nreturn u()\n")},
	"u.lua":       {Data: []byte("local function u()\n    return 1\n")},
}

func TestSplice(t *testing.T) {
	s, err := splice(testFiles, "s.lua")
	require.NoError(t, err)
	assert.Equal(t, "#!lua\n"+
		"-- b\nlocal function b() return 1 end\n"+
		"--@include b.lua\n-- a\nlocal function a() return b() end\n"+
		"--@include a.lua\n--@include b.lua\n-- s\nreturn a() + b()\n", s.text,
		"each helper once, after the helpers it names, then the script")
	for line, want := range map[int]string{1: "s.lua:1", 2: "b.lua:1", 3: "b.lua:2", 4: "a.lua:1", 6: "a.lua:3", 7: "s.lua:2", 10: "s.lua:5"} {
		file, at, ok := s.locate(line)
		require.True(t, ok)
		assert.Equal(t, want, file+":"+strconv.Itoa(at), "line %d", line)
	}

	for name, why := range map[string]string{
		"missing.lua": "nope.lua",
		"cycle.lua":   "cycle",
		"late.lua":    "late.lua:3: an include must come before",
		"twice.lua":   "included twice",
		"script.lua":  "s.lua is a script",
		"helper.lua":  "a script opens with a #!lua shebang",
		"absent.lua":  "absent.lua",
		"unended.lua": `u.lua:1: function u has no "end" line`,
	} {
		_, err := splice(testFiles, name)
		assert.ErrorContains(t, err, why, name)
	}
	assert.Panics(t, func() { load("absent.lua", once) }, "a script that cannot be assembled panics at load")
}

// TestSplicePrunes: a helper function the script uses, directly or through
// another, stays; one that nothing used names (a comment does not count)
// is left out as blank lines, so that every line keeps its number.
func TestSplicePrunes(t *testing.T) {
	s, err := splice(testFiles, "prune.lua")
	require.NoError(t, err)
	assert.Equal(t, "#!lua\n"+
		"-- p\nlocal function inner()\n    return 1\nend\n"+
		"local function used()\n    return inner()\nend\n\n\n\n\nlocal k = 3\n"+
		"--@include p.lua\n-- not named here: unused, dead\nreturn used()\n", s.text)
	file, at, ok := s.locate(13)
	require.True(t, ok)
	assert.Equal(t, "p.lua:12", file+":"+strconv.Itoa(at), "lines after a pruned function keep their numbers")
}
