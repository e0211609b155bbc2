package backends

import (
	"context"
	"time"
)

// Dynamic partitions (SPEC §10): a dataset whose definition is of kind
// DYNAMIC expects the values kept in the store for it, added and removed
// at run time (Store.AddPartitions, Store.RemovePartitions). Each value is
// kept under its dataset and dimension: the dimension is empty for a
// one-dimensional dataset, and names a DYNAMIC dimension of a
// multi-dimensional one, so that values of several dimensions of one
// dataset can live side by side. Stores keep them ordered by SortKey of the
// value, so that a page of values, the next value after one, and whether
// one value is in the set each cost one ordered read, however many values
// the set holds.

// MaxPartitionValues bounds the values one AddPartitions or
// RemovePartitions call takes.
const MaxPartitionValues = 10000

// PartitionValue is one value of a dynamic set.
type PartitionValue struct {
	Dataset   string
	Dimension string
	Value     string
	// AddedAt is when the value was added: it is due at AddedAt + lag
	// and late, when not READY, at AddedAt + deadline.
	AddedAt time.Time
}

// DynamicTx is what a transaction of every backend provides for the
// values of dynamic sets. A Tx of every backend implements it (the
// backends assert it at compile time); the engine asks for it with
// dynamicTx.
type DynamicTx interface {
	// GetPartitionValues reads the values ids of (dataset, dimension), as
	// GetRows reads rows (locked or guarded so that a concurrent add or
	// remove of them is ordered with this transaction); aligned with ids,
	// nil for a value not in the set.
	GetPartitionValues(ctx context.Context, dataset, dimension string, ids []string) ([]*PartitionValue, error)
	// PutPartitionValue adds a value (replacing one of the same key).
	PutPartitionValue(ctx context.Context, v PartitionValue) error
	// DeletePartitionValue removes a value if it is in the set.
	DeletePartitionValue(ctx context.Context, dataset, dimension, value string) error
}

// DynamicLister is what every backend provides to list dynamic sets.
type DynamicLister interface {
	// ListPartitionValues returns up to limit values of (dataset,
	// dimension) from from inclusive and after after exclusive (each ""
	// for no bound) up to to inclusive ("" no bound), in shortlex order, as
	// committed, in one ordered read.
	ListPartitionValues(ctx context.Context, dataset, dimension, from, after, to string, limit int) ([]PartitionValue, error)
}
