// Command benchtable reads the output of rlock's comparison benchmarks
// (BenchmarkCompare in package integration) on stdin and prints one
// markdown table: a row per scenario and measure, a column per library,
// the floor Redis itself sets, rlock's ratios to that floor and to the best
// peer, and the target of the row with whether rlock meets it.
//
//	go test ./integration -run '^$' -bench Compare -benchtime 2s -count 1 | go run ./integration/benchtable
//
// With -count above 1 every figure is the median of the runs. Lines that
// are not benchmark results or configuration are ignored, so the output
// of go test can be piped in whole.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(res.values) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no BenchmarkCompare results on stdin")
		os.Exit(1)
	}
	write(os.Stdout, res)
}

// prefix starts the name of every benchmark the table reads.
const prefix = "BenchmarkCompare/"

// results are what the benchmark output said: every value of every
// measure, by benchmark name (without prefix and GOMAXPROCS suffix) and
// unit, and the configuration lines ("cpu: ...") in order.
type results struct {
	values map[string]map[string][]float64
	config [][2]string
}

// parse reads go test -bench output.
func parse(r io.Reader) (results, error) {
	res := results{values: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			// A configuration line is "key: value", key without spaces.
			if key, value, ok := strings.Cut(line, ": "); ok && key != "" && !strings.ContainsAny(key, " \t") {
				res.config = append(res.config, [2]string{key, value})
			}
			continue
		}
		fields := strings.Fields(line)
		// name, iterations, then value and unit pairs.
		if len(fields) < 4 || len(fields)%2 != 0 {
			continue
		}
		name := strings.TrimPrefix(fields[0], prefix)
		if i := strings.LastIndexByte(name, '-'); i >= 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return res, fmt.Errorf("%q: %w", line, err)
			}
			if res.values[name] == nil {
				res.values[name] = map[string][]float64{}
			}
			res.values[name][fields[i+1]] = append(res.values[name][fields[i+1]], v)
		}
	}
	return res, sc.Err()
}

// get returns the median of bench's values in unit, and whether there are
// any.
func (r results) get(bench, unit string) (float64, bool) {
	vs := slices.Clone(r.values[bench][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2], true
	}
	return (vs[n/2-1] + vs[n/2]) / 2, true
}

// write prints the table, the floors it used and the configuration.
func write(w io.Writer, r results) {
	fmt.Fprintln(w, "| scenario | rlock | rueidislock | redsync | redislock | floor | rlock/floor | rlock/best peer | target |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, row := range rows {
		c, ok := row.compute(r)
		if !ok {
			continue
		}
		cols := []string{row.title}
		for _, lib := range libraries {
			cols = append(cols, figure(c.lib[lib], hasKey(c.lib, lib)))
		}
		cols = append(cols,
			figure(c.floor, c.hasFloor),
			ratio(c.floorRatio, c.hasRatios && c.hasFloor && c.floor > 0),
			ratio(c.bestRatio, c.hasRatios && c.hasBest && c.best > 0),
			verdict(row, c))
		fmt.Fprintf(w, "| %s |\n", strings.Join(cols, " | "))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, notes)
	var extra []string
	if v, ok := r.get("Floor/roundtrip", "ns/op"); ok {
		cpu, _ := r.get("Floor/roundtrip", "cpu-µs/op")
		extra = append(extra, fmt.Sprintf("EVALSHA round trip %s µs on rueidis (client CPU %s µs)", figure(v/1e3, true), figure(cpu, true)))
	}
	for _, idle := range []string{"2ms", "30ms"} {
		if v, ok := r.get("Floor/roundtrip-idle="+idle, "p50-µs"); ok {
			extra = append(extra, fmt.Sprintf("%s µs after %s idle (p50)", figure(v, true), idle))
		}
	}
	if v, ok := r.get("Floor/roundtrip-goredis", "ns/op"); ok {
		cpu, _ := r.get("Floor/roundtrip-goredis", "cpu-µs/op")
		extra = append(extra, fmt.Sprintf("%s µs on go-redis (client CPU %s µs)", figure(v/1e3, true), figure(cpu, true)))
	}
	if v, ok := r.get("Floor/scripts", "ns/op"); ok {
		extra = append(extra, fmt.Sprintf("rlock's acquire and release scripts sent raw %s µs", figure(v/1e3, true)))
	}
	if v, ok := r.get("Floor/parallel-scripts", "cycles/s"); ok {
		extra = append(extra, fmt.Sprintf("the same from 64 goroutines %s cycles/s", figure(v, true)))
	}
	if v, ok := r.get("Floor/pipelined", "calls/s"); ok {
		extra = append(extra, fmt.Sprintf("pipelined %s calls/s", figure(v, true)))
	}
	if len(extra) > 0 {
		fmt.Fprintf(w, "Measured: %s.\n", strings.Join(extra, "; "))
	}
	if len(r.config) > 0 {
		fmt.Fprintln(w)
		seen := map[[2]string]bool{}
		for _, kv := range r.config {
			if !seen[kv] {
				seen[kv] = true
				fmt.Fprintf(w, "- %s: %s\n", kv[0], kv[1])
			}
		}
	}
}

func hasKey(m map[string]float64, k string) bool {
	_, ok := m[k]
	return ok
}

// verdict is the target column of row: its target and whether rlock met it.
func verdict(w row, c cells) string {
	if w.target == nil {
		return ""
	}
	text, met := w.target(c)
	switch {
	case met:
		return text + ": met"
	case w.versusBest > 0 && c.hasFloor && c.hasBest &&
		(w.higher && c.floor < w.versusBest*c.best || !w.higher && c.floor > w.versusBest*c.best):
		// The floor does less than any lock can, so no lock on it meets
		// the target in this run.
		return text + ": **missed**, out of reach: the floor itself misses it"
	}
	return text + ": **missed**"
}

// figure formats a measured value with the precision it deserves.
func figure(v float64, ok bool) string {
	switch {
	case !ok:
		return "–"
	case v > -0.005 && v < 0.005:
		return "0"
	case v >= 1000 || v <= -1000:
		return thousands(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 100 || v <= -100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10 || v <= -10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// thousands puts a thin space between groups of three digits.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	return sign + strings.Join(append([]string{s}, out...), " ")
}

// ratio formats a ratio of rlock to another figure.
func ratio(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}
