package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// openSmallTxnStore opens a store on a member with etcd's default
// --max-txn-ops (128), as an external cluster has unless told otherwise.
func openSmallTxnStore(t *testing.T, ctx context.Context) backends.Store {
	_, s := openTxnBackend(t, ctx, 128)
	return s
}

func definedDataset(t *testing.T, ctx context.Context, s backends.Store, id string, def partition.Def) {
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, URL: "s3://lake/" + id, Location: "dt={dataid}/", Partitions: &def})
	require.NoError(t, err)
}

// TestMappedBackfillFitsMaxTxnOps: a job with mappings defined over a
// history of READY chunks is backfilled; on a member with the default
// --max-txn-ops its upsert must succeed and it must claim that history.
func TestMappedBackfillFitsMaxTxnOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := openSmallTxnStore(t, ctx)
	def := partition.Def{Kind: partition.Daily, Start: "2024-01-01"}
	for _, d := range []string{"raw", "roll7"} {
		definedDataset(t, ctx, s, d, def)
	}
	_, err := s.PublishRange(ctx, "raw", "2024-01-01", "2024-12-31")
	require.NoError(t, err)
	job := backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}}
	_, err = s.UpsertJob(ctx, job)
	if err != nil {
		t.Logf("first upsert: %v", err)
		// The job is stored; upserting it again as an operator would
		// must leave it claiming its history.
		_, err = s.UpsertJob(ctx, job)
		require.NoError(t, err)
	}
	c, err := s.FindNext(ctx, "roll", "e")
	require.NoError(t, err)
	require.NotNil(t, c, "a year of READY raw days, and findNext offers nothing to the lookback")
}

// TestMappedLatestPublishFitsMaxTxnOps: a first snapshot arriving after
// 150 days of input, on a member with the default --max-txn-ops (128),
// must be published in one transaction (it writes one sweep, not a
// candidate per waiting output) and make those days claimable, each claim
// looking back over up to 149 days for it.
func TestMappedLatestPublishFitsMaxTxnOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := openSmallTxnStore(t, ctx)
	def := partition.Def{Kind: partition.Daily, Start: "2024-01-01"}
	for _, d := range []string{"raw", "dim", "enriched"} {
		definedDataset(t, ctx, s, d, def)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "enrich", Output: "enriched", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{{Dataset: "dim", Mapping: partition.Mapping{Kind: partition.Latest}}}})
	require.NoError(t, err)
	_, err = s.PublishRange(ctx, "raw", "2024-01-01", "2024-05-29")
	require.NoError(t, err)
	c, err := s.FindNext(ctx, "enrich", "e")
	require.NoError(t, err)
	require.Nil(t, c, "no snapshot yet")
	_, err = s.Publish(ctx, "dim", "2024-01-01")
	require.NoError(t, err, "publishing the snapshot that 150 outputs wait for")
	claimed := 0
	for {
		c, err := s.FindNext(ctx, "enrich", "e")
		require.NoError(t, err)
		if c == nil {
			break
		}
		claimed++
	}
	require.Equal(t, 150, claimed)
}

// TestMappedClaimMustFitMaxTxnOps: on a member with the default
// --max-txn-ops, a job whose claims would read more input chunks than one
// transaction holds (a weekly roll-up of hours: 168) is refused when it is
// upserted, saying what to raise; a daily roll-up of hours (up to 24,
// DST days included: the repeated hour is one) is stored, and its claims
// commit.
func TestMappedClaimMustFitMaxTxnOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := openSmallTxnStore(t, ctx)
	definedDataset(t, ctx, s, "hours", partition.Def{Kind: partition.Hourly, Start: "2025-03-29T00", Timezone: "Europe/Berlin"})
	definedDataset(t, ctx, s, "weeks", partition.Def{Kind: partition.Weekly, Start: "2025-W13", Timezone: "Europe/Berlin"})
	definedDataset(t, ctx, s, "days", partition.Def{Kind: partition.Daily, Start: "2025-03-29", Timezone: "Europe/Berlin"})
	window := []backends.InputMapping{{Dataset: "hours", Mapping: partition.Mapping{Kind: partition.TimeWindow}}}
	weekly := backends.Job{ID: "weekly", Output: "weeks", Inputs: []string{"hours"}, InputMappings: window}
	for _, call := range []func(context.Context, backends.Job) (backends.Job, error){s.ValidateJob, s.UpsertJob} {
		_, err := call(ctx, weekly)
		require.Error(t, err)
		require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err))
		// A week of hours, from the kinds alone.
		require.Contains(t, err.Error(), "reads up to 168 input chunks")
		require.Contains(t, err.Error(), "--max-txn-ops")
	}
	_, err := s.Job(ctx, "weekly")
	require.Equal(t, backends.CodeNotFound, backends.CodeOf(err))
	// A monthly roll-up reaching 9,000 hours back: refused from the bound
	// of its windows (a 31-day month and 9,000 hours), without listing any.
	definedDataset(t, ctx, s, "months", partition.Def{Kind: partition.Monthly, Start: "2025-04", Timezone: "Europe/Berlin"})
	far := backends.Job{ID: "far", Output: "months", Inputs: []string{"hours"},
		InputMappings: []backends.InputMapping{{Dataset: "hours", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -9000}}}}
	_, err = s.ValidateJob(ctx, far)
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "reads up to 9744 input chunks")

	_, err = s.UpsertJob(ctx, backends.Job{ID: "daily", Output: "days", Inputs: []string{"hours"}, InputMappings: window})
	require.NoError(t, err)
	// 2025-03-30 in Berlin has 23 hours; claim it and the day before.
	_, err = s.PublishRange(ctx, "hours", "2025-03-29T00", "2025-03-30T23")
	require.NoError(t, err)
	for _, day := range []string{"2025-03-29", "2025-03-30"} {
		c, err := s.FindNext(ctx, "daily", "e")
		require.NoError(t, err)
		require.NotNil(t, c)
		require.Equal(t, day, c.DataID)
	}
}

// TestMappedClaimFitsAfterDefinitionGrows: the same refusal when the job
// is stored first and its input's definition then grows past what one
// transaction holds (a STATIC set read through ALL, from 8 values to 80):
// the dataset's upsert must refuse it, as the job's would, or every claim
// of the job fails.
func TestMappedClaimFitsAfterDefinitionGrows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := openSmallTxnStore(t, ctx)
	values := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("r%02d", i))
		}
		return out
	}
	definedDataset(t, ctx, s, "regions", partition.Def{Kind: partition.Static, Values: values(8)})
	definedDataset(t, ctx, s, "out", partition.Def{Kind: partition.Static, Values: []string{"x"}})
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Output: "out", Inputs: []string{"regions"},
		InputMappings: []backends.InputMapping{{Dataset: "regions", Mapping: partition.Mapping{Kind: partition.All}}}})
	require.NoError(t, err)
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "regions", URL: "s3://lake/regions", Location: "dt={dataid}/",
		Partitions: &partition.Def{Kind: partition.Static, Values: values(80)}})
	if err == nil {
		for _, v := range values(80) {
			_, err := s.Publish(ctx, "regions", v)
			require.NoError(t, err)
		}
		_, err = s.FindNext(ctx, "j", "e")
		require.NoError(t, err, "the definition was accepted, and every claim of the job fails")
		return
	}
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err))
}
