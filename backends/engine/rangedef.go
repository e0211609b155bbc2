package engine

import (
	"errors"
	"iter"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// expectedDataIDs yields the expected dataids of ds in [from, to], and
// tells whether ds has a partition definition: INVALID_ARGUMENT when from
// or to is not a dataid of the definition's kind.
func expectedDataIDs(ds backends.Dataset, from, to string) (iter.Seq[string], bool, error) {
	if ds.Partitions == nil {
		return nil, false, nil
	}
	seq, err := ds.Partitions.Range(from, to)
	if errors.Is(err, partition.ErrInvalid) {
		return nil, true, backends.InvalidArgument("dataset %q has %s partitions: %v", ds.ID, ds.Partitions.Kind, err)
	}
	return seq, true, err
}
