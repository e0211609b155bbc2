package backends

// MaxRangeDataIDs bounds how many dataids one range operation covers.
const MaxRangeDataIDs = 10000

// RangeSkip is a chunk a range operation left as it was, and why: Code is
// the error the single-chunk operation would have answered (LOCKED,
// NOT_FOUND), Reason its message.
type RangeSkip struct {
	DataID string
	Code   Code
	Reason string
}

// RangeResult is what a range operation did: Changed chunks were written,
// Unchanged ones were already as asked, Skipped ones were refused, in
// dataid order.
type RangeResult struct {
	Changed   int
	Unchanged int
	Skipped   []RangeSkip
}

// RangeProgress is how far a range operation got before it failed: the
// first Done of its Total dataids (the last of them LastDataID, "" when
// none) were served, with the result so far.
type RangeProgress struct {
	RangeResult
	Done, Total int
	LastDataID  string
}
