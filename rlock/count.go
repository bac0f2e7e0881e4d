package rlock

import (
	"fmt"
	"strconv"
)

// MaxCount is the largest number of permits a Semaphore has, and the
// largest count a CountDownLatch starts from: Redis's scripts count in
// Lua's numbers, doubles, which hold every integer up to 2^53 exactly and
// none beyond it for sure. A larger count is refused with
// ErrInvalidArgument, rather than stored and read back rounded, or
// negative.
const MaxCount int64 = 1 << 53

// maxCountArg is MaxCount as a script argument.
var maxCountArg = strconv.FormatInt(MaxCount, 10)

// checkCount reports why n cannot be what counts: it must be from least
// to MaxCount.
func checkCount(what string, n int, least int64) error {
	if int64(n) < least || int64(n) > MaxCount {
		return fmt.Errorf("%w: %s %d: must be from %d to MaxCount (2^53)", ErrInvalidArgument, what, n, least)
	}
	return nil
}
