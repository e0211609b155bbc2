package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// fakeTx is the part of a Tx that lockCascade uses, over a map of rows
// (their keys are the map's); onLock runs at the first LockChunks call,
// and every call is recorded.
type fakeTx struct {
	backends.Tx
	rows   map[backends.RowKey]backends.StatusRow
	locks  []string
	onLock func()
}

func (f *fakeTx) GetRows(_ context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	out := make([]*backends.StatusRow, len(keys))
	for i, k := range keys {
		if r, ok := f.rows[k]; ok {
			r.RowKey = k
			out[i] = &r
		}
	}
	return out, nil
}

func (f *fakeTx) ListReads(_ context.Context, dataset, dataid, job string) ([]backends.StatusRow, error) {
	byKey := map[backends.RowKey]*backends.StatusRow{}
	for k, r := range f.rows {
		if k.Dataset == dataset && k.DataID == dataid && k.Job == job && k.Role == backends.RoleInput && k.ReadFor != "" {
			r.RowKey = k
			byKey[k] = &r
		}
	}
	return backends.SortedReads(byKey), nil
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
	cat := backends.NewCatalog([]backends.Dataset{{ID: "raw", Partitions: &daily}, {ID: "roll7", Partitions: &daily}},
		[]backends.Job{{ID: "roll", Inputs: []string{"raw"}, Output: "roll7",
			InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}}})
	read := func(forID string) backends.RowKey {
		return backends.ReadKey("roll", backends.Read{Dataset: "raw", DataID: "2025-01-10"}, forID)
	}
	tx := &fakeTx{rows: map[backends.RowKey]backends.StatusRow{
		{Dataset: "raw", DataID: "2025-01-10", Role: backends.RoleOutput}: {Status: backends.StatusReady},
		read("2025-01-12"): {Status: backends.StatusDone},
		{Dataset: "roll7", DataID: "2025-01-12", Job: "roll", Role: backends.RoleOutput}: {Status: backends.StatusReady},
	}}
	tx.onLock = func() {
		tx.rows[read("2025-01-14")] = backends.StatusRow{Status: backends.StatusDone}
		tx.rows[backends.RowKey{Dataset: "roll7", DataID: "2025-01-14", Job: "roll", Role: backends.RoleOutput}] = backends.StatusRow{Status: backends.StatusReady}
	}
	err := lockCascade(context.Background(), tx, cat, "raw", "2025-01-10", lockPlan{}, nil)
	var re *errReplan
	require.True(t, errors.As(err, &re), "got %v", err)
	require.Contains(t, re.chunks, backends.Read{Dataset: "roll7", DataID: "2025-01-14"})
	require.NotContains(t, tx.locks, "2025-01-14 roll7 X", "the first attempt did not know it")

	tx.locks = nil
	require.NoError(t, lockCascade(context.Background(), tx, cat, "raw", "2025-01-10", lockPlan{}, re.chunks))
	require.Equal(t, []string{"2025-01-10 raw X", "2025-01-10 roll7 X", "2025-01-12 roll7 X", "2025-01-14 roll7 X"}, tx.locks)
	require.True(t, slices.IsSorted(tx.locks))

	// withReplans runs an operation again with the wider hint.
	calls := 0
	require.NoError(t, withReplans(func(hint []backends.Read) error {
		calls++
		if calls == 1 {
			return &errReplan{chunks: []backends.Read{{Dataset: "roll7", DataID: "2025-01-14"}}}
		}
		require.Equal(t, []backends.Read{{Dataset: "roll7", DataID: "2025-01-14"}}, hint)
		return nil
	}))
	require.Equal(t, 2, calls)
}
