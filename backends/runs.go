package backends

import (
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// The runs read model (the dashboard's partition grid and history strip): a
// span of a dataset's partitions answered as runs of one status and
// lateness, and at a coarser zoom as summaries per column of that zoom, so
// that a long and mostly READY history comes back in a few hundred bytes
// instead of one entry per partition.

// Bounds of one PartitionRuns call. Limit bounds the work (the expected
// dataids looked at: ten years of hours fit), MaxRuns the answer.
const (
	DefaultRunsLimit = 10000
	MaxRunsLimit     = 100000
	// DefaultSlicedRunsLimit is DefaultRunsLimit for a slice, whose
	// dataids are read one key each.
	DefaultSlicedRunsLimit = 1000
	MaxRuns                = 2000
)

// RunsFilter selects a span of one dataset's partitions.
type RunsFilter struct {
	Dataset string
	// From and To bound the span inclusively: dataids of the definition's
	// kind. An empty From is the definition's start (the first chunk
	// without one); an empty To is where Partitions ends without one. A
	// time kind's span never reaches windows that are not due yet.
	From, To string
	// Limit bounds the dataids looked at (DefaultRunsLimit when 0, at most
	// MaxRunsLimit); when it ends the span first, Next says where it goes on.
	Limit int
	// MaxRuns bounds the runs and the column runs answered (MaxRuns when 0,
	// at most MaxRuns); when it ends the span first, Next says where it
	// goes on.
	MaxRuns int
	// Zoom, a time kind coarser than the dataset's, asks for Columns.
	Zoom partition.Kind
	// Runs asks for Runs. A caller that wants only Columns leaves it false,
	// so that MaxRuns does not cut its span short.
	Runs bool
	// Slice keeps, of a dataset with dimensions, the tuples whose values of
	// the sliced dimensions are listed (one region's dates); From and To
	// may then be values of the first dimension. Its rows are read by key.
	Slice []partition.Slice
}

// PartitionRun is a run of consecutive dataids of one status and lateness.
type PartitionRun struct {
	From, To string
	Count    int
	Status   Status
	Late     bool
}

// PartitionColumnRun is a run of consecutive columns of a zoom (dataids of
// the zoom's kind: a day, a week, a month) whose partitions hold the same
// counts: Count partitions in each column, of which Ready, Running, Failed,
// Resubmit, Hold are in that status, Missing have no OUTPUT row, and Late
// are late. A column is the calendar period of its dataid, whatever the
// definition's time zone: the hours 2026-11-22T00..T23 are in the day
// 2026-11-22, a week in the month of its Thursday.
type PartitionColumnRun struct {
	From, To string
	Columns  int
	Count    int
	Ready    int
	Running  int
	Failed   int
	Resubmit int
	Hold     int
	Missing  int
	Late     int
}

// PartitionSpan is a span of a dataset's partitions as runs.
type PartitionSpan struct {
	Dataset string
	// Kind is the definition's kind; "" for a dataset without one, whose
	// span is its chunks (OUTPUT rows of its producer).
	Kind partition.Kind
	// From and To are the first and last dataid of the span ("" when it
	// is empty), Count how many dataids it holds.
	From, To string
	Count    int
	// Next is the dataid the span would go on with when Limit or MaxRuns
	// ended it before the asked span did; "" otherwise. The last column may
	// then be partial.
	Next string
	// ChangesAt is when the clock alone next changes the answer (a window of
	// the asked span becomes due, a partition of it late); zero when never.
	ChangesAt time.Time
	Runs      []PartitionRun
	Columns   []PartitionColumnRun
}

// StatusSpan names a span of one job's OUTPUT rows on a dataset for
// OutputStatusBatcher: dataids from From to To inclusive, Limit rows at most.
type StatusSpan struct {
	Dataset, Job, From, To string
	Limit                  int
}
