package backends

import (
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// MaxPartitionScan bounds how many expected dataids one Partitions call
// looks at. A filter that matches few of them (missing chunks in ten years
// of READY days) returns a short or empty page with HasNextPage and an
// EndCursor to go on from, rather than reading the whole history in one
// request.
const MaxPartitionScan = 10 * MaxPageSize

// PartitionFilter selects expected dataids of one dataset.
type PartitionFilter struct {
	Dataset string
	// From and To bound the dataids inclusively. An empty To stands for the
	// last due dataid (time kinds), the end (bounded INTEGER), the highest
	// INTEGER dataid seen (INTEGER without end), or the last value (STATIC);
	// a given To may reach dataids that are not due yet.
	From string
	To   string
	// Status, when set, keeps only partitions with that status;
	// StatusNone keeps the missing ones (no OUTPUT row).
	Status *Status
	// Late, when set, keeps only partitions that are (or are not) late.
	Late *bool
	// First is the page size (DefaultPageSize when 0, at most MaxPageSize).
	First int
	// After is a cursor (Cursors or EndCursor) of a previous page.
	After string
	// Slice keeps, of a dataset with dimensions, the dataids whose values
	// of the sliced dimensions are listed (SPEC §10); From and To may then
	// be values of the first dimension. Its rows are read one by one (a
	// point read a dataid) rather than as a run.
	Slice []partition.Slice
}

// Partition is one expected dataid of a dataset with the status of its
// OUTPUT row (StatusNone: missing).
type Partition struct {
	Dataset string
	DataID  string
	Status  Status
	// WindowStart, WindowEnd and DueAt are zero for INTEGER and STATIC
	// dataids, which have no window and are due at once.
	WindowStart time.Time
	WindowEnd   time.Time
	DueAt       time.Time
	// Late: not READY at or past the window's end + the deadline.
	Late bool
}

// PartitionPage is one page of partitions in dataid order.
type PartitionPage struct {
	Partitions []Partition
	// Cursors[i] is the cursor of Partitions[i].
	Cursors []string
	// EndCursor is where the next page starts: the cursor of the last
	// partition, or of the last expected dataid looked at when the scan
	// bound ended the page first (the page may then be empty).
	EndCursor   string
	HasNextPage bool
}

// MaxPartitionCount bounds the expected dataids PartitionCounts looks at
// when it reads a dataset's rows: ten years of hours (87,600) fit. A
// longer history is then counted over its most recent windows only
// (Truncated). A time or INTEGER definition whose rows are all expected
// dataids is counted from the kept counts instead, whole
// (engine/partitionkept.go).
const MaxPartitionCount = 100000

// PartitionCount is how many of a dataset's expected chunks are missing and
// late at At.
type PartitionCount struct {
	Dataset string
	At      time.Time
	// Missing counts the due expected dataids (the time kinds up to the
	// last due window; INTEGER without end up to the highest one seen) that
	// have no OUTPUT row.
	Missing int
	// Late counts the expected dataids that are late: not READY at or past
	// their window's end + deadline (time kinds with a deadline only).
	Late int
	// OldestMissing and OldestLate are the first such dataids ("" when none).
	OldestMissing string
	OldestLate    string
	// Truncated: the rows were read (not counted from the kept counts),
	// the history is longer than MaxPartitionCount expected dataids and
	// only part of it was counted: its most recent ones (time kinds,
	// INTEGER with an end), or its first ones (INTEGER without end).
	Truncated bool
}

// ValueCountFilter asks for the missing and late counts of a dataset with
// dimensions by value of one of them (STATIC or DYNAMIC).
type ValueCountFilter struct {
	Dataset   string
	Dimension string
	// Behind keeps only the values with missing or late dataids.
	Behind bool
	// WithoutOldest leaves OldestMissing and OldestLate out: the counts
	// alone, which the kept counts answer without reading a value's
	// dataids (the /metrics gauges).
	WithoutOldest bool
	// First is the page size (DefaultPageSize when 0, at most
	// MaxValueCountPage); After a value of the dimension: the page starts
	// after it.
	First int
	After string
}

// MaxValueCountPage bounds a page of counts by value: a page reads each
// value's dataids that its counts do not answer (the oldest missing and
// late ones) by key.
const MaxValueCountPage = 100

// ValueCount is the missing and late dataids of one value of a dimension:
// PartitionCount's figures over the dataids with that value.
type ValueCount struct {
	Value string
	// ExpectedFrom is, for a DYNAMIC dimension beside a time dimension,
	// the first dataid of the time dimension the value is expected at.
	ExpectedFrom  string
	Missing, Late int
	OldestMissing string
	OldestLate    string
}

// ValueCountPage is a page of ValueCount, and the whole dimension's
// figures.
type ValueCountPage struct {
	Dataset, Dimension string
	At                 time.Time
	// Values is how many values the dimension has; Behind how many of
	// them have missing or late dataids, -1 when that was not counted
	// (the rows were read, for the values of the page only).
	Values, Behind int
	Counts         []ValueCount
	HasNextPage    bool
}

// ChunkCount is how many chunks of a dataset are in each status: the
// OUTPUT rows of its producer (its source rows, job "", for a source).
type ChunkCount struct {
	Dataset  string
	Total    int
	Running  int
	Ready    int
	Failed   int
	Resubmit int
	Hold     int
}

// Add counts n more chunks in status s (an OUTPUT status).
func (c *ChunkCount) Add(s Status, n int) {
	c.Total += n
	switch s {
	case StatusRunning:
		c.Running += n
	case StatusReady:
		c.Ready += n
	case StatusFailed:
		c.Failed += n
	case StatusResubmit:
		c.Resubmit += n
	case StatusHold:
		c.Hold += n
	}
}

// RangeOpKind names a range operation.
type RangeOpKind string

// The range operations.
const (
	RangePublish  RangeOpKind = "publish"
	RangeResubmit RangeOpKind = "resubmit"
	RangeHold     RangeOpKind = "hold"
)

// RangeRequest is a range operation over a slice (Store.SlicedRange).
type RangeRequest struct {
	Op       RangeOpKind
	Dataset  string
	From, To string
	Slice    []partition.Slice
	// Cascade is resubmit's; Reason is hold's.
	Cascade bool
	Reason  string
}
