package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// BenchLatestSnapshot measures a first snapshot arriving late: days of a
// daily source lat-raw are READY from 2000-01-01, and job lat-enrich reads
// them one to one and lat-dim through LATEST. With none of lat-dim READY,
// no output is claimable; then lat-dim's first day is published. It
// reports how long that publish took (publish-ms), how many outputs
// findNext then offered (offered, of days) and the mean time of a findNext
// and complete (cycle-µs). Run it once per store (-benchtime 1x).
func BenchLatestSnapshot(b *testing.B, s backends.Store, days int) {
	ctx := context.Background()
	def := partition.Def{Kind: partition.Daily, Start: "2000-01-01"}
	for _, id := range []string{"lat-raw", "lat-dim", "lat-out"} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}", Partitions: &def}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.UpsertJob(ctx, backends.Job{ID: "lat-enrich", Output: "lat-out", Inputs: []string{"lat-raw", "lat-dim"},
		InputMappings: []backends.InputMapping{{Dataset: "lat-dim", Mapping: partition.Mapping{Kind: partition.Latest}}}}); err != nil {
		b.Fatal(err)
	}
	last := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days-1).Format(time.DateOnly)
	if _, err := s.PublishRange(ctx, "lat-raw", "2000-01-01", last); err != nil {
		b.Fatal(err)
	}
	if c, err := s.FindNext(ctx, "lat-enrich", "bench"); err != nil || c != nil {
		b.Fatalf("before the snapshot: claim %v, error %v", c, err)
	}
	if b.N != 1 {
		b.Fatal("one arrival per store: run with -benchtime 1x")
	}
	{
		b.ResetTimer()
		t0 := time.Now()
		if _, err := s.Publish(ctx, "lat-dim", "2000-01-01"); err != nil {
			b.Fatal(err)
		}
		publish := time.Since(t0)
		t1 := time.Now()
		offered := 0
		for {
			c, err := s.FindNext(ctx, "lat-enrich", "bench")
			if err != nil {
				b.Fatal(err)
			}
			if c == nil {
				break
			}
			if err := s.Complete(ctx, c.Token); err != nil {
				b.Fatal(err)
			}
			offered++
		}
		b.StopTimer()
		b.ReportMetric(float64(publish.Microseconds())/1000, "publish-ms")
		b.ReportMetric(float64(offered), "offered")
		if offered > 0 {
			b.ReportMetric(float64(time.Since(t1).Microseconds())/float64(offered), "cycle-µs")
		}
		b.ReportMetric(0, "ns/op")
	}
}
