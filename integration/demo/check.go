package main

import (
	"cmp"
	"fmt"
	"slices"
)

// checkExclusive verifies, from the sections' monotonic times and fencing
// tokens, that the lock was held by one worker at a time: ordered by token,
// each section ends before the next one starts, and no token repeats.
func checkExclusive(sections []section) error {
	slices.SortFunc(sections, func(a, b section) int { return cmp.Compare(a.token, b.token) })
	for i := 1; i < len(sections); i++ {
		prev, next := sections[i-1], sections[i]
		if next.token == prev.token {
			return fmt.Errorf("token %d granted twice (%s, %s)", next.token, prev.worker, next.worker)
		}
		if next.start.Before(prev.end) {
			return fmt.Errorf("%s (token %d) started before %s (token %d) ended: two holders at once",
				next.worker, next.token, prev.worker, prev.token)
		}
	}
	return nil
}
