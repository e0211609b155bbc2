package memory

import (
	"context"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The values of dynamic sets (backends/dynamic.go), by (dataset,
// dimension), then value. A listing sorts the set it reads: memory serves
// tests, not a million values.

type valueKey struct{ dataset, dimension string }

func (t *tx) GetPartitionValues(_ context.Context, dataset, dimension string, ids []string) ([]*backends.PartitionValue, error) {
	out := make([]*backends.PartitionValue, len(ids))
	k := valueKey{dataset, dimension}
	for i, id := range ids {
		at, ok := t.values[k][id]
		if !ok {
			at, ok = t.b.values[k][id]
		}
		if ok && !at.IsZero() {
			out[i] = &backends.PartitionValue{Dataset: dataset, Dimension: dimension, Value: id, AddedAt: at}
		}
	}
	return out, nil
}

func (t *tx) PutPartitionValue(_ context.Context, v backends.PartitionValue) error {
	t.setValue(valueKey{v.Dataset, v.Dimension}, v.Value, v.AddedAt)
	return nil
}

func (t *tx) DeletePartitionValue(_ context.Context, dataset, dimension, value string) error {
	t.setValue(valueKey{dataset, dimension}, value, time.Time{})
	return nil
}

// setValue notes a write: a zero time removes the value.
func (t *tx) setValue(k valueKey, value string, at time.Time) {
	if t.values == nil {
		t.values = map[valueKey]map[string]time.Time{}
	}
	if t.values[k] == nil {
		t.values[k] = map[string]time.Time{}
	}
	t.values[k][value] = at
}

// commitValues applies t's writes of values; the caller holds b.mu.
func (b *Backend) commitValues(t *tx) {
	for k, vals := range t.values {
		set := b.values[k]
		if set == nil {
			set = map[string]time.Time{}
			b.values[k] = set
		}
		for v, at := range vals {
			if at.IsZero() {
				delete(set, v)
			} else {
				set[v] = at
			}
		}
		if len(set) == 0 {
			delete(b.values, k)
		}
	}
}

func (b *Backend) ListPartitionValues(_ context.Context, dataset, dimension, from, after, to string, limit int) ([]backends.PartitionValue, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.values[valueKey{dataset, dimension}]
	ids := make([]string, 0, len(set))
	for v := range set {
		if (from == "" || backends.CompareDataID(v, from) >= 0) && (after == "" || backends.CompareDataID(v, after) > 0) && (to == "" || backends.CompareDataID(v, to) <= 0) {
			ids = append(ids, v)
		}
	}
	slices.SortFunc(ids, backends.CompareDataID)
	out := make([]backends.PartitionValue, 0, min(limit, len(ids)))
	for _, v := range ids[:min(limit, len(ids))] {
		out = append(out, backends.PartitionValue{Dataset: dataset, Dimension: dimension, Value: v, AddedAt: set[v]})
	}
	return out, nil
}
