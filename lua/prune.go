package lua

import (
	"fmt"
	"regexp"
	"strings"
)

// A helper file defines its functions at its top level, each opening with
// a line "local function <name>(" and closing with a line "end", both at
// the start of the line, or on one line that ends in " end". Lua makes a closure of every such definition
// each time Redis runs the script, whether the call uses it or not, and a
// script uses a few of the helpers its includes define (acquire.lua needs
// none of release.lua's waking). So splice leaves out every helper
// function that the script calls neither itself nor through a function it
// calls, keeping its lines as blank ones so that every other line keeps
// its number (locate).

var (
	funcOpen   = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	luaComment = regexp.MustCompile(`--.*$`)
	luaName    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// helperFunc is one function a helper file defines: its name and the
// lines it spans, first to last, in the file's lines.
type helperFunc struct {
	name        string
	first, last int
}

// funcsOf returns the functions f defines at its top level.
func funcsOf(f *luaFile) ([]helperFunc, error) {
	var fns []helperFunc
	for i := 0; i < len(f.lines); i++ {
		m := funcOpen.FindStringSubmatch(f.lines[i])
		if m == nil {
			continue
		}
		first := i
		for i < len(f.lines) && f.lines[i] != "end" && !(i == first && strings.HasSuffix(f.lines[i], " end")) {
			i++
		}
		if i == len(f.lines) {
			return nil, fmt.Errorf("%s:%d: function %s has no \"end\" line of its own", f.name, first+1, m[1])
		}
		fns = append(fns, helperFunc{name: m[1], first: first, last: i})
	}
	return fns, nil
}

// namesIn adds to names every name the lines use, comments left out.
func namesIn(names map[string]bool, lines []string) {
	for _, l := range lines {
		for _, n := range luaName.FindAllString(luaComment.ReplaceAllString(l, ""), -1) {
			names[n] = true
		}
	}
}

// unusedFuncs returns, by helper, the lines (by index) of the functions
// that root's own lines and the helpers' lines outside functions use
// neither directly nor through a function they use.
func unusedFuncs(root *luaFile, helpers []*luaFile) (map[*luaFile]map[int]bool, error) {
	type def struct {
		file *luaFile
		fn   helperFunc
	}
	defs := map[string][]def{}
	used := map[string]bool{}
	namesIn(used, root.lines)
	for _, h := range helpers {
		fns, err := funcsOf(h)
		if err != nil {
			return nil, err
		}
		outside := 0
		for _, fn := range fns {
			namesIn(used, h.lines[outside:fn.first])
			outside = fn.last + 1
			defs[fn.name] = append(defs[fn.name], def{h, fn})
		}
		namesIn(used, h.lines[outside:])
	}
	// A used function's body uses more: follow it until nothing new.
	kept := map[string]bool{}
	for grew := true; grew; {
		grew = false
		for name := range used {
			if kept[name] || defs[name] == nil {
				continue
			}
			kept[name], grew = true, true
			for _, d := range defs[name] {
				namesIn(used, d.file.lines[d.fn.first+1:d.fn.last+1])
			}
		}
	}
	unused := map[*luaFile]map[int]bool{}
	for name, ds := range defs {
		if kept[name] {
			continue
		}
		for _, d := range ds {
			if unused[d.file] == nil {
				unused[d.file] = map[int]bool{}
			}
			for i := d.fn.first; i <= d.fn.last; i++ {
				unused[d.file][i] = true
			}
		}
	}
	return unused, nil
}
