package backendtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// BenchRanges times the range operations over 10,000 dataids of a DAILY
// source dataset read by one job, on store s: publishRange creating the
// 10,000 chunks (and the consumer's candidates), publishRange again (all
// unchanged), holdRange, and resubmitRange with cascade. It reports each
// as ms/<operation>; every iteration works on a dataset of its own. For
// comparison it also times 1,000 single publishes (ms/1000-single-publish).
func BenchRanges(b *testing.B, s backends.Store) {
	ctx := context.Background()
	const from, to = "2000-01-01", "2027-05-18" // 10,000 days
	steps := []struct {
		name string
		run  func(ds string) (backends.RangeResult, error)
		want int // changed
	}{
		{"publishRange", func(ds string) (backends.RangeResult, error) { return s.PublishRange(ctx, ds, from, to) }, 10_000},
		{"publishRange-again", func(ds string) (backends.RangeResult, error) { return s.PublishRange(ctx, ds, from, to) }, 0},
		{"holdRange", func(ds string) (backends.RangeResult, error) { return s.HoldRange(ctx, ds, from, to, "bench") }, 10_000},
		{"resubmitRange-cascade", func(ds string) (backends.RangeResult, error) { return s.ResubmitRange(ctx, ds, from, to, true) }, 10_000},
	}
	spent := make([]time.Duration, len(steps))
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ds, out := fmt.Sprintf("bench-raw-%d", i), fmt.Sprintf("bench-out-%d", i)
		for _, d := range []backends.Dataset{{ID: ds, Partitions: &partition.Def{Kind: partition.Daily, Start: from}}, {ID: out}} {
			if _, err := s.UpsertDataset(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.UpsertJob(ctx, backends.Job{ID: fmt.Sprintf("bench-job-%d", i), Inputs: []string{ds}, Output: out}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for k, st := range steps {
			start := time.Now()
			res, err := st.run(ds)
			spent[k] += time.Since(start)
			if err != nil {
				b.Fatalf("%s: %v", st.name, err)
			}
			if res.Changed != st.want || len(res.Skipped) != 0 {
				b.Fatalf("%s: changed %d, skipped %d; want %d changed", st.name, res.Changed, len(res.Skipped), st.want)
			}
		}
	}
	for k, st := range steps {
		b.ReportMetric(float64(spent[k].Milliseconds())/float64(b.N), "ms/"+st.name)
	}
	b.StopTimer()
	b.ReportMetric(singlePublishes(b, s), "ms/1000-single-publish")
}

// singlePublishes times 1,000 Publish calls, one after the other, for
// comparison, in ms.
func singlePublishes(b *testing.B, s backends.Store) float64 {
	ctx := context.Background()
	if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: "bench-single"}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		if _, err := s.Publish(ctx, "bench-single", fmt.Sprintf("%04d", i)); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Milliseconds())
}
