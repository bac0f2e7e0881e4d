package lua

import "strconv"

// Code is the first element of the reply of a script of the request
// protocol: every acquire and release script, and the latch's count-down.
// Each code means one thing in every script. The scripts name them as
// codes.lua does (Granted is GRANTED there), with the same numbers; the
// header of each script says which codes it answers, and with what after
// them.
type Code int64

// The reply codes. Keep them equal to codes.lua's: a test checks it.
const (
	// Refused: {Refused, pttl}. Not taken: another owner holds the lock,
	// or no permit is free. pttl, in ms, bounds the caller's wait; -1 when
	// nothing will end by itself.
	Refused Code = 0
	// Granted: {Granted, count, token}. Taken or re-entered: the owner
	// holds count levels, under fencing token (0 for a permit).
	Granted Code = 1
	// Stale: {Stale, 0}. A copy of a call that a later call of the same
	// owner superseded; nothing was done. A live request never gets it.
	Stale Code = 2
	// NotHeld: {NotHeld, 0}. A release of an owner that holds nothing.
	NotHeld Code = 3
	// StillHeld: {StillHeld, count}. Released down to count > 0 levels.
	StillHeld Code = 4
	// Freed: {Freed, 0}. Released down to 0: the owner holds nothing any
	// more.
	Freed Code = 5
	// Counted: {Counted, count}. The request counted the latch down;
	// count is what is left.
	Counted Code = 6
	// NotCounted: {NotCounted, count}. The request did not count: the
	// latch was at 0, or (settling) no call of the request ran.
	NotCounted Code = 7
	// Ran: {Ran, results}. The holder's commands ran (do.lua); results
	// has one reply or error per command.
	Ran Code = 8
	// RanEarlier: {RanEarlier, 0}. A call of the request whose reply was
	// lost ran the commands; they did not run again.
	RanEarlier Code = 9
	// NotRun: {NotRun, 0}. (Settling) no call of the request ran the
	// commands, and none will.
	NotRun Code = 10
	// Handed: {Handed, token}. Released down to 0 and handed, in the
	// same call, to a waiter of the releasing owner's Client, which holds
	// one level under token (release.lua).
	Handed Code = 11
)

var codeNames = [...]string{
	Refused: "REFUSED", Granted: "GRANTED", Stale: "STALE", NotHeld: "NOT_HELD",
	StillHeld: "STILL_HELD", Freed: "FREED", Counted: "COUNTED", NotCounted: "NOT_COUNTED",
	Ran: "RAN", RanEarlier: "RAN_EARLIER", NotRun: "NOT_RUN", Handed: "HANDED",
}

// String returns the code's name in codes.lua, or the number of a code
// that is none of them.
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.FormatInt(int64(c), 10) + ")"
}
