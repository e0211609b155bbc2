package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestStoredHostOnlyZoneKeepsWorking: a dataset stored with a host-only
// zone name (posix/Europe/Berlin), before such names were refused, keeps
// working: its definition reads as stored, its windows are Berlin's (from
// the embedded database, on every replica alike), it takes publishes, is
// counted, and a job maps onto it. Only storing that name again is
// refused, saying what to name instead.
func TestStoredHostOnlyZoneKeepsWorking(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	clock := backends.NewFakeClock(time.Date(2026, 3, 29, 3, 30, 0, 0, time.UTC)) // 05:30 in Berlin
	_, _, version, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	legacy := partition.Def{Kind: partition.Hourly, Start: "2026-03-29T00", Timezone: "posix/Europe/Berlin"}
	_, _, err = b.PutDataset(ctx, backends.Dataset{ID: "raw", Location: "h={dataid}", Partitions: &legacy}, nil, version)
	require.NoError(t, err, "as an earlier version stored it")
	s := engine.New(b, engine.WithClock(clock))

	d, err := s.Dataset(ctx, "raw")
	require.NoError(t, err)
	require.Equal(t, &legacy, d.Partitions, "the definition reads as stored")
	page, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "raw"})
	require.NoError(t, err)
	var ids []string
	for _, p := range page.Partitions {
		ids = append(ids, p.DataID)
	}
	require.Equal(t, []string{"2026-03-29T00", "2026-03-29T01", "2026-03-29T03", "2026-03-29T04"}, ids,
		"Berlin's clocks skip 02:00 on 2026-03-29")
	require.Equal(t, time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), page.Partitions[2].WindowStart.UTC())

	_, err = s.Publish(ctx, "raw", "2026-03-29T03")
	require.NoError(t, err)
	_, err = s.Publish(ctx, "raw", "2026-03-29T02")
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "a skipped hour: %v", err)
	c, err := s.PartitionCounts(ctx, "raw")
	require.NoError(t, err)
	require.Equal(t, 3, c.Missing)

	daily := partition.Def{Kind: partition.Daily, Start: "2026-03-29", Timezone: "Europe/Berlin"}
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "days", Partitions: &daily})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "roll", Inputs: []string{"raw"}, Output: "days",
		InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow}}}})
	require.NoError(t, err, "a mapping onto the stored definition is valid")

	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "raw", Location: "h={dataid}", Partitions: &legacy})
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, `name "Europe/Berlin"`)
	renamed := legacy
	renamed.Timezone = "Europe/Berlin"
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "raw", Location: "h={dataid}", Partitions: &renamed})
	require.NoError(t, err)
}
