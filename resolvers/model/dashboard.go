package model

import (
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// PartitionRuns is backends.PartitionSpan as the API answers it: the
// values that mean "none" as null.
type PartitionRuns struct {
	Dataset   string
	Kind      *partition.Kind
	From      *string
	To        *string
	Count     int
	Next      *string
	ChangesAt *time.Time
	Runs      []backends.PartitionRun
	Columns   []backends.PartitionColumnRun
}
