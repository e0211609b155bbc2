package backends

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// fakeTx is the part of a Tx that lockCascade uses, over a map of rows
// (their keys are the map's); onLock runs at the first LockChunks call,
// and every call is recorded.
type fakeTx struct {
	Tx
	rows   map[RowKey]StatusRow
	locks  []string
	onLock func()
}

func (f *fakeTx) GetRows(_ context.Context, keys []RowKey) ([]*StatusRow, error) {
	out := make([]*StatusRow, len(keys))
	for i, k := range keys {
		if r, ok := f.rows[k]; ok {
			r.RowKey = k
			out[i] = &r
		}
	}
	return out, nil
}

func (f *fakeTx) ListReads(_ context.Context, dataset, dataid, job string) ([]StatusRow, error) {
	byKey := map[RowKey]*StatusRow{}
	for k, r := range f.rows {
		if k.Dataset == dataset && k.DataID == dataid && k.Job == job && k.Role == RoleInput && k.ReadFor != "" {
			r.RowKey = k
			byKey[k] = &r
		}
	}
	return SortedReads(byKey), nil
}

func (f *fakeTx) LockChunks(_ context.Context, dataid string, exclusive, shared []string) error {
	for _, d := range exclusive {
		f.locks = append(f.locks, dataid+" "+d+" X")
	}
	for _, d := range shared {
		f.locks = append(f.locks, dataid+" "+d+" S")
	}
	if f.onLock != nil {
		f.onLock()
		f.onLock = nil
	}
	return nil
}

// TestLockCascadeReplans: a read of the invalidated chunk made between the
// walk that plans the locks and the locks themselves (a claim that
// committed in between) is found by the walk made with the locks held,
// and the invalidation runs again locking it too, in dataid order.
func TestLockCascadeReplans(t *testing.T) {
	daily := partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	cat := NewCatalog([]Dataset{{ID: "raw", Partitions: &daily}, {ID: "roll7", Partitions: &daily}},
		[]Job{{ID: "roll", Inputs: []string{"raw"}, Output: "roll7",
			InputMappings: []InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}}})
	read := func(forID string) RowKey {
		return ReadKey("roll", Read{Dataset: "raw", DataID: "2025-01-10"}, forID)
	}
	tx := &fakeTx{rows: map[RowKey]StatusRow{
		{Dataset: "raw", DataID: "2025-01-10", Role: RoleOutput}: {Status: StatusReady},
		read("2025-01-12"): {Status: StatusDone},
		{Dataset: "roll7", DataID: "2025-01-12", Job: "roll", Role: RoleOutput}: {Status: StatusReady},
	}}
	tx.onLock = func() {
		tx.rows[read("2025-01-14")] = StatusRow{Status: StatusDone}
		tx.rows[RowKey{Dataset: "roll7", DataID: "2025-01-14", Job: "roll", Role: RoleOutput}] = StatusRow{Status: StatusReady}
	}
	err := lockCascade(context.Background(), tx, cat, "raw", "2025-01-10", lockPlan{}, nil)
	var re *errReplan
	require.True(t, errors.As(err, &re), "got %v", err)
	require.Contains(t, re.chunks, Read{Dataset: "roll7", DataID: "2025-01-14"})
	require.NotContains(t, tx.locks, "2025-01-14 roll7 X", "the first attempt did not know it")

	tx.locks = nil
	require.NoError(t, lockCascade(context.Background(), tx, cat, "raw", "2025-01-10", lockPlan{}, re.chunks))
	require.Equal(t, []string{"2025-01-10 raw X", "2025-01-10 roll7 X", "2025-01-12 roll7 X", "2025-01-14 roll7 X"}, tx.locks)
	require.True(t, slices.IsSorted(tx.locks))

	// withReplans runs an operation again with the wider hint.
	calls := 0
	require.NoError(t, withReplans(func(hint []Read) error {
		calls++
		if calls == 1 {
			return &errReplan{chunks: []Read{{Dataset: "roll7", DataID: "2025-01-14"}}}
		}
		require.Equal(t, []Read{{Dataset: "roll7", DataID: "2025-01-14"}}, hint)
		return nil
	}))
	require.Equal(t, 2, calls)
}
