package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// testDatasetPartitions: a dataset's partition definition (SPEC §8) is
// stored as given, a time kind's zone defaulting to UTC, validated at
// upsert, replaced or removed by a later upsert, and never touches chunks.
func (s *suite) testDatasetPartitions(t *testing.T) {
	b := s.setup(t)
	deadline := 6 * time.Hour
	daily := &partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-12-31",
		Timezone: "Europe/Berlin", Lag: time.Hour, Deadline: &deadline}
	d, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales", Location: "dt={dataid}", Partitions: daily})
	require.NoError(t, err)
	require.Equal(t, daily, d.Partitions, "the upsert answers the definition as stored")
	got, err := b.s.Dataset(b.ctx, "sales")
	require.NoError(t, err)
	require.Equal(t, daily, got.Partitions)

	for _, def := range []partition.Def{
		{Kind: partition.Hourly, Start: "2016-01-01T00"},
		{Kind: partition.Weekly, Start: "2026-W53", Timezone: "America/New_York"},
		{Kind: partition.Monthly, Start: "2024-02"},
		{Kind: partition.Integer, Start: "0", End: "99"},
		{Kind: partition.Integer},
		{Kind: partition.Static, Values: []string{"eu", "us", "apac"}},
	} {
		d, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales", Partitions: &def})
		require.NoError(t, err, "%+v", def)
		want := def
		if want.Kind.IsTime() && want.Timezone == "" {
			want.Timezone = "UTC"
		}
		require.Equal(t, &want, d.Partitions)
		all, err := b.s.Datasets(b.ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		require.Equal(t, &want, all[0].Partitions, "Datasets lists the definition too")
	}

	b.publish("sales", "eu")
	d, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales"})
	require.NoError(t, err)
	require.Nil(t, d.Partitions, "an upsert without a definition removes it")
	got, err = b.s.Dataset(b.ctx, "sales")
	require.NoError(t, err)
	require.Nil(t, got.Partitions)
	require.Equal(t, backends.StatusReady, b.status("sales", "eu"), "changing a definition never touches chunks")

	week := 7 * 24 * time.Hour
	for _, bad := range []partition.Def{
		{},
		{Kind: "YEARLY", Start: "2026"},
		{Kind: partition.Daily},
		{Kind: partition.Daily, Start: "2026-13-01"},
		{Kind: partition.Daily, Start: "2026-11-22T05"},
		{Kind: partition.Hourly, Start: "2026-11-22"},
		{Kind: partition.Weekly, Start: "2025-W53"},
		{Kind: partition.Daily, Start: "2026-01-02", End: "2026-01-01"},
		{Kind: partition.Daily, Start: "2026-01-01", Timezone: "Mars/Olympus_Mons"},
		{Kind: partition.Daily, Start: "2026-01-01", Lag: -time.Second},
		{Kind: partition.Daily, Start: "2026-01-01", Lag: week, Deadline: &deadline},
		{Kind: partition.Daily, Start: "2026-01-01", Lag: 400 * 24 * time.Hour},
		{Kind: partition.Integer, Start: "x"},
		{Kind: partition.Integer, Timezone: "UTC"},
		{Kind: partition.Static},
		{Kind: partition.Static, Values: []string{"a", "a"}},
		{Kind: partition.Static, Values: []string{"bad/id"}},
	} {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales", Partitions: &bad})
		requireCode(t, err, backends.CodeInvalidArgument, "%+v", bad)
	}
	got, err = b.s.Dataset(b.ctx, "sales")
	require.NoError(t, err)
	require.Nil(t, got.Partitions, "a refused definition changes nothing")
}

// testJobLimits: a job's backoff and concurrency settings (SPEC §1 Job)
// are stored, defaulted and validated on every backend.
func (s *suite) testJobLimits(t *testing.T) {
	b := s.setup(t)
	b.datasets("in", "out")
	j := b.upsertJob(backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out"})
	require.Equal(t, 0, j.RetryDelaySeconds)
	require.Equal(t, backends.DefaultRetryMaxDelaySeconds, j.RetryMaxDelaySeconds)
	require.Equal(t, 0, j.MaxConcurrent, "no limit by default")
	require.Equal(t, "", j.Pool)

	_, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: "warehouse", Slots: 2})
	require.NoError(t, err)
	j = b.upsertJob(backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out",
		RetryDelaySeconds: 30, RetryMaxDelaySeconds: 600, MaxConcurrent: 4, Pool: "warehouse"})
	got, err := b.s.Job(b.ctx, "j")
	require.NoError(t, err)
	for _, g := range []backends.Job{j, got} {
		require.Equal(t, 30, g.RetryDelaySeconds)
		require.Equal(t, 600, g.RetryMaxDelaySeconds)
		require.Equal(t, 4, g.MaxConcurrent)
		require.Equal(t, "warehouse", g.Pool)
	}

	for _, bad := range []backends.Job{
		{RetryDelaySeconds: -1},
		{RetryMaxDelaySeconds: -1},
		{RetryDelaySeconds: backends.MaxRetryDelaySeconds + 1},
		{MaxConcurrent: -1},
		{Pool: "Not A Slug"},
	} {
		bad.ID, bad.Inputs, bad.Output = "j", []string{"in"}, "out"
		_, err := b.s.UpsertJob(b.ctx, bad)
		requireCode(t, err, backends.CodeInvalidArgument, "%+v", bad)
	}
	got, err = b.s.Job(b.ctx, "j")
	require.NoError(t, err)
	require.Equal(t, 4, got.MaxConcurrent, "a refused job changes nothing")
}
