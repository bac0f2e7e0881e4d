package lua

import (
	"fmt"
	"io/fs"
	"strings"
)

// A script includes the helper files it uses by naming them, one line
// each, right after its shebang:
//
//	#!lua flags=allow-oom
//	--@include codes.lua
//	--@include hold.lua
//
// A helper names the helpers it uses the same way, on its first lines (a
// helper has no shebang). The loader puts each helper a script needs,
// named by it or by a helper it includes, once, after the shebang and
// before the script's own lines: a helper after the helpers it names, in
// the order they are named. Lua sees one chunk, in which a local a helper
// defines is in scope for everything after it.
//
// Everything is resolved when the package is initialised: a missing or
// misplaced include, a cycle, or a helper with a shebang panics then, and
// never at request time. A file names exactly the helpers whose names it
// uses (TestIncludesAreExact), so no script gets a helper it does not
// name, itself or through a helper it names.
const includeDirective = "--@include "

// luaFile is one .lua file: its lines and the helpers it names.
type luaFile struct {
	name     string
	lines    []string // without their line ends
	script   bool     // it opens with a shebang: Redis runs it
	includes []string // the helpers it names, in order
}

// readLuaFile reads and checks the file called name in fsys.
func readLuaFile(fsys fs.FS, name string) (*luaFile, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(string(b), "\n")
	f := &luaFile{name: name, lines: strings.Split(text, "\n")}
	f.script = strings.HasPrefix(f.lines[0], "#!lua")
	i := 0
	if f.script {
		i = 1
	}
	seen := map[string]bool{}
	for ; i < len(f.lines) && strings.HasPrefix(f.lines[i], includeDirective); i++ {
		helper := strings.TrimSpace(strings.TrimPrefix(f.lines[i], includeDirective))
		if seen[helper] {
			return nil, fmt.Errorf("%s:%d: %s is included twice", name, i+1, helper)
		}
		seen[helper] = true
		f.includes = append(f.includes, helper)
	}
	for ; i < len(f.lines); i++ {
		if strings.Contains(f.lines[i], strings.TrimSpace(includeDirective)) {
			return nil, fmt.Errorf("%s:%d: an include must come before the file's other lines", name, i+1)
		}
	}
	return f, nil
}

// span is a run of lines of a script's text that come from one file:
// from line start of the text on, they are the lines of file from first.
type span struct {
	start int
	file  string
	first int
}

// spliced is a script's text, as Redis runs it, and where its lines come
// from.
type spliced struct {
	text  string
	spans []span // by start
}

// splice returns the script called name in fsys with the helpers it
// includes put in after its shebang, less the helper functions it does
// not use (prune.go).
func splice(fsys fs.FS, name string) (spliced, error) {
	root, err := readLuaFile(fsys, name)
	if err != nil {
		return spliced{}, err
	}
	if !root.script {
		return spliced{}, fmt.Errorf("%s: a script opens with a #!lua shebang", name)
	}
	helpers, err := resolve(fsys, root)
	if err != nil {
		return spliced{}, err
	}
	unused, err := unusedFuncs(root, helpers)
	if err != nil {
		return spliced{}, err
	}
	var b strings.Builder
	out := spliced{spans: []span{{start: 1, file: name, first: 1}}}
	b.WriteString(root.lines[0] + "\n")
	line := 2
	for _, h := range helpers {
		out.spans = append(out.spans, span{start: line, file: h.name, first: 1})
		for i, l := range h.lines {
			if unused[h][i] {
				l = "" // a function the script does not use (prune.go)
			}
			b.WriteString(l + "\n")
		}
		line += len(h.lines)
	}
	out.spans = append(out.spans, span{start: line, file: name, first: 2})
	for _, l := range root.lines[1:] {
		b.WriteString(l + "\n")
	}
	out.text = b.String()
	return out, nil
}

// resolve returns the helpers that root needs, each once, every helper
// after the helpers it names, in the order they are named.
func resolve(fsys fs.FS, root *luaFile) ([]*luaFile, error) {
	const visiting, done = 1, 2
	state := map[string]int{root.name: visiting}
	var order []*luaFile
	var visit func(f *luaFile) error
	visit = func(f *luaFile) error {
		for _, name := range f.includes {
			switch state[name] {
			case visiting:
				return fmt.Errorf("%s: including %s makes a cycle", f.name, name)
			case done:
				continue
			}
			h, err := readLuaFile(fsys, name)
			if err != nil {
				return fmt.Errorf("%s: include: %w", f.name, err)
			}
			if h.script {
				return fmt.Errorf("%s: %s is a script, not a helper", f.name, name)
			}
			state[name] = visiting
			if err := visit(h); err != nil {
				return err
			}
			state[name] = done
			order = append(order, h)
		}
		return nil
	}
	return order, visit(root)
}

// locate returns the file and the line in it that line of the text comes
// from; ok is false for a line outside the text.
func (s spliced) locate(line int) (file string, at int, ok bool) {
	if line < 1 || line > strings.Count(s.text, "\n") {
		return "", 0, false
	}
	i := len(s.spans) - 1
	for s.spans[i].start > line {
		i--
	}
	sp := s.spans[i]
	return sp.file, sp.first + line - sp.start, true
}
