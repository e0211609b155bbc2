package backendtest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// BenchFindNextSchedule compares findNext on a scheduled job with findNext
// on a plain one (SPEC §8: a schedule's queue stays flat), each on a fresh
// store from newStore:
//
//   - one-input: job j reads src, whose chunks 1..N are published first;
//   - hourly-10y: job gen has no inputs and writes an HOURLY dataset whose
//     definition starts ten years ago, so that 87,600 windows are due and
//     none has a row; findNext claims them from the first.
//
// Each reports the p50 and p90 latency of findNext alone (the completion
// after each claim is not timed).
func BenchFindNextSchedule(b *testing.B, newStore func(b *testing.B) backends.Store) {
	ctx := context.Background()
	b.Run("one-input", func(b *testing.B) {
		s := newStore(b)
		for _, d := range []string{"src", "out"} {
			mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: d, Location: "/" + d + "/{dataid}"}))
		}
		_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
		mustB(b, err)
		for i := 1; i <= b.N; i++ {
			_, err := s.Publish(ctx, "src", strconv.Itoa(i))
			mustB(b, err)
		}
		benchFindNextLatency(b, s, "j")
	})
	b.Run("hourly-10y", func(b *testing.B) {
		s := newStore(b)
		start := time.Now().UTC().AddDate(-10, 0, 0).Truncate(time.Hour)
		def := partition.Def{Kind: partition.Hourly, Start: start.Format("2006-01-02T15")}
		mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "h", Location: "/h/{dataid}", Partitions: &def}))
		_, err := s.UpsertJob(ctx, backends.Job{ID: "gen", Output: "h"})
		mustB(b, err)
		benchFindNextLatency(b, s, "gen")
		if n, err := s.QueueLength(ctx, "gen"); err == nil {
			b.ReportMetric(float64(n), "queue")
		}
	})
}

func upsertDataset(ctx context.Context, s backends.Store, d backends.Dataset) error {
	_, err := s.UpsertDataset(ctx, d)
	return err
}

func mustB(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// benchFindNextLatency calls findNext b.N times on job, completing each
// claim untimed, and reports the p50 and p90 of findNext.
func benchFindNextLatency(b *testing.B, s backends.Store, job string) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		c, err := s.FindNext(ctx, job, "bench")
		lat = append(lat, time.Since(t0))
		if err != nil || c == nil {
			b.Fatalf("findNext %s: claim %v, error %v", job, c, err)
		}
		b.StopTimer()
		mustB(b, s.Complete(ctx, c.Token))
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "p90-ns")
}
