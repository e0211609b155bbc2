package backendtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The runs benchmark (the dashboard at scale): an HOURLY source with ten
// years of hours, 2016-01-01T00 to 2025-12-31T23 (87,648), mostly READY.

// RunsBenchClock is where the runs benchmark's clock stands: every hour of
// the ten years is due.
var RunsBenchClock = time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC)

// RunsBenchStatus is the status of the hour with ordinal i (hours since
// 2016-01-01T00) in the runs benchmark and the dashboard benchmark's seed:
// one hour in 997 FAILED, one in 1,499 on HOLD, a missing stretch of 30
// hours every 5,000, the rest READY. StatusNone: no row.
func RunsBenchStatus(i int) backends.Status {
	switch {
	case i%5000 >= 4970:
		return backends.StatusNone
	case i%997 == 500:
		return backends.StatusFailed
	case i%1499 == 700:
		return backends.StatusHold
	}
	return backends.StatusReady
}

// SeedRunsBench defines the HOURLY source "hours" (from 2016-01-01T00,
// deadline two hours) on an empty store and writes its rows with put. It
// returns the number of rows written.
func SeedRunsBench(ctx context.Context, s backends.Store, put RowWriter) (int, error) {
	deadline := 2 * time.Hour
	def := partition.Def{Kind: partition.Hourly, Start: "2016-01-01T00", Deadline: &deadline}
	if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: "hours", Location: "/hours/{dataid}", Partitions: &def}); err != nil {
		return 0, err
	}
	start := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows []backends.StatusRow
	written := 0
	for i, t := 0, start; t.Before(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); i, t = i+1, t.Add(time.Hour) {
		st := RunsBenchStatus(i)
		if st == backends.StatusNone {
			continue
		}
		rows = append(rows, backends.StatusRow{RowKey: backends.RowKey{Dataset: "hours", DataID: t.Format("2006-01-02T15"), Role: backends.RoleOutput},
			Status: st, UpdatedAt: RunsBenchClock})
		if len(rows) == 1000 {
			if err := put(ctx, rows); err != nil {
				return written, err
			}
			written, rows = written+len(rows), rows[:0]
		}
	}
	if len(rows) > 0 {
		written += len(rows)
		return written, put(ctx, rows)
	}
	return written, nil
}

// BenchRuns measures PartitionRuns of "hours" on a store seeded by
// SeedRunsBench: the whole ten years in one call (runs, and columns by
// month: the dashboard's history strip), and the last 100 days by day
// (columns only: the overview's row of an hourly dataset). It reports p50
// and p90 in milliseconds, and the runs and column runs answered.
func BenchRuns(b *testing.B, s backends.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    backends.RunsFilter
	}{
		{"history", backends.RunsFilter{Dataset: "hours", Limit: backends.MaxRunsLimit, Runs: true, Zoom: partition.Monthly}},
		{"overview100d", backends.RunsFilter{Dataset: "hours", From: "2025-09-23T00", Limit: backends.MaxRunsLimit, Zoom: partition.Daily}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			var span backends.PartitionSpan
			for range b.N {
				t0 := time.Now()
				var err error
				span, err = s.PartitionRuns(ctx, tc.f)
				lat = append(lat, time.Since(t0))
				if err != nil || span.Count == 0 || span.Next != "" {
					b.Fatalf("%s: %d dataids, next %q, error %v", tc.name, span.Count, span.Next, err)
				}
			}
			reportLatency(b, lat)
			b.ReportMetric(float64(len(span.Runs)), "runs")
			b.ReportMetric(float64(len(span.Columns)), "column-runs")
			b.ReportMetric(float64(span.Count), "dataids")
		})
	}

	b.Run("latestReady", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			ids, err := s.LatestReady(ctx, []string{"hours"})
			lat = append(lat, time.Since(t0))
			if err != nil || ids[0] != "2025-12-31T23" {
				b.Fatalf("latestReady: %q, error %v", ids, err)
			}
		}
		reportLatency(b, lat)
	})
}

// reportLatency reports the p50 and p90 of latencies in milliseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*9/10]), "p90-ms")
}
