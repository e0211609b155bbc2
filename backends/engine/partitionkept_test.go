package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
)

// countHook runs hook once, while the first kept counts are read.
type countHook struct {
	*memory.Backend
	hook  func()
	calls atomic.Int64
}

func (c *countHook) CountStatuses(ctx context.Context, dataset, job string) (map[backends.Status]int, error) {
	if c.calls.Add(1) == 1 {
		c.hook()
	}
	return c.Backend.CountStatuses(ctx, dataset, job)
}

// TestKeptCountBesideARangeAhead: a range published ahead of the last due
// dataid while the kept counts are read (between the two reads of the
// rows ahead) does not make the due days look published: the reads are
// made again until they agree.
func TestKeptCountBesideARangeAhead(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 20, 12, 0, 0, 0, time.UTC))
	mem := memory.New()
	other := engine.New(mem, engine.WithClock(clock))
	defer other.Close()
	_, err := other.UpsertDataset(ctx, backends.Dataset{ID: "src", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}})
	require.NoError(t, err)
	be := &countHook{Backend: mem, hook: func() {
		_, err := other.PublishRange(ctx, "src", "2026-02-01", "2026-02-20")
		require.NoError(t, err)
	}}
	s := engine.New(be, engine.WithClock(clock))
	defer s.Close()
	c, err := s.PartitionCounts(ctx, "src")
	require.NoError(t, err)
	require.Positive(t, be.calls.Load())
	require.Equal(t, []any{19, "2026-01-01"}, []any{c.Missing, c.OldestMissing}, "19 due days, none published")
}

// TestKeptCountBesideAnEarlierHold: a store loaded from another (here:
// marked as such) may hold rows an earlier version's hold made at any
// dataid; while such a dataset has HOLD chunks its rows are read, and the
// row at "2026-1-05" is not counted. A dataset made since, or without a
// HOLD or RESUBMIT chunk, is counted from the kept counts.
func TestKeptCountBesideAnEarlierHold(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 20, 12, 0, 0, 0, time.UTC))
	mem := memory.New()
	require.NoError(t, mem.Load(ctx, backends.DumpDatasets, nil)) // loaded now: later than the clock
	s := engine.New(mem, engine.WithClock(clock))
	defer s.Close()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}})
	require.NoError(t, err)
	require.NoError(t, mem.Update(ctx, func(tx backends.Tx) error { // as an earlier hold did
		return tx.PutRow(ctx, backends.StatusRow{RowKey: backends.RowKey{Dataset: "src", DataID: "2026-1-05", Role: backends.RoleOutput},
			Status: backends.StatusHold, UpdatedAt: clock.Now()})
	}))
	c, err := s.PartitionCounts(ctx, "src")
	require.NoError(t, err)
	require.Equal(t, []any{19, "2026-01-01"}, []any{c.Missing, c.OldestMissing}, "19 due days, none published")
}
