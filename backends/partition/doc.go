// Package partition is the arithmetic of partition definitions and
// partition mappings: which dataids a dataset is expected to have, when each
// is due and late, and which input dataids an output dataid reads. It is
// pure (no storage, no clock of its own) and imports only the standard
// library, so the engine and every backend can share it.
//
// # Definitions
//
// A Def names a kind and its bounds. The time kinds have fixed-width
// dataids, so shortlex order (the order the stores keep) is time order:
//
//	HOURLY   2026-11-22T05   that local wall-clock hour
//	DAILY    2026-11-22      that local day
//	WEEKLY   2026-W47        that ISO week, Monday 00:00 to the next Monday
//	MONTHLY  2026-11         that month
//	INTEGER  0, 1, 2, ...    no window; start to end, or unbounded
//	STATIC   each of Values  no window; all expected at once
//
// Each time dataid has a window in the definition's zone (IANA, read from
// the database built into the binary, never the host's; default
// UTC): from the first instant the zone's wall clock reaches the period's
// civil start to the first instant it reaches the next period's. Windows
// tile the time line: a day on which clocks spring forward has 23 hours and
// the skipped hour is no dataid; a day on which they fall back has 25 hours
// and its repeated hour is one window of two hours. Hourly dataids thus stay
// the names people and paths use, without a UTC offset, and every instant
// belongs to exactly one window.
//
// A window is due at its end + Lag and late when it is not READY by its
// end + Deadline. Expected dataids are computed, never stored: Range yields
// them lazily, Next and Prev step, Contains tests, and DueBefore finds the
// last due one by arithmetic on the clock, so a ten-year hourly history
// costs no more than a new one.
//
// Internally a time dataid is a period number on the civil calendar (hours,
// days, ISO weeks or months since 1970, see calendar.go); window.go maps
// periods to instants in a zone.
//
// # Mappings
//
// A Mapping maps an output dataid to the input dataids it reads (IDENTITY,
// TIME_WINDOW, LATEST, ALL) and back: InputSpan and Inputs go forward,
// OutputSpan and Outputs go back and give exactly the outputs whose forward
// set holds the input. Each direction is one contiguous run of dataids (a
// Span), within the definitions' expected sets. LATEST depends on which
// candidate is READY, which only the stored rows tell: its spans are the
// candidates, and Inputs and Outputs answer ErrClaimTime.
//
// Every error about the caller's input matches ErrInvalid; the messages
// name the field and say what a valid value looks like.
package partition
