package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestMappedUpsertBadIDRefused: an upsert of a job with mappings whose id
// is not a job id is refused with INVALID_ARGUMENT, as one without
// mappings is, whatever the id holds (the backfill mark is written before
// the job is validated).
func TestMappedUpsertBadIDRefused(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, backends.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	daily := partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	for _, d := range []string{"raw", "roll7"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Partitions: &daily})
		require.NoError(t, err)
	}
	for _, id := range []string{"a\x00b", "\xff", strings.Repeat("x", 4000)} {
		t.Run(fmt.Sprintf("%.10q", id), func(t *testing.T) {
			_, err := s.UpsertJob(ctx, backends.Job{ID: id, Output: "roll7", Inputs: []string{"raw"},
				InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}})
			require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%.200v", err)
		})
	}
}
