package backendtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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
// findNext then offered to runners working side by side (offered, of
// days), and how many findNext → complete cycles they made per second
// (cycles/s). Run it once per store and runners (-benchtime 1x).
func BenchLatestSnapshot(b *testing.B, s backends.Store, days, runners int) {
	ctx := context.Background()
	def := partition.Def{Kind: partition.Daily, Start: "2000-01-01"}
	p := fmt.Sprintf("lat%d-", runners)
	for _, id := range []string{p + "raw", p + "dim", p + "out"} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}", Partitions: &def}); err != nil {
			b.Fatal(err)
		}
	}
	job := p + "enrich"
	if _, err := s.UpsertJob(ctx, backends.Job{ID: job, Output: p + "out", Inputs: []string{p + "raw", p + "dim"},
		InputMappings: []backends.InputMapping{{Dataset: p + "dim", Mapping: partition.Mapping{Kind: partition.Latest}}}}); err != nil {
		b.Fatal(err)
	}
	last := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days-1).Format(time.DateOnly)
	if _, err := s.PublishRange(ctx, p+"raw", "2000-01-01", last); err != nil {
		b.Fatal(err)
	}
	if c, err := s.FindNext(ctx, job, "bench"); err != nil || c != nil {
		b.Fatalf("before the snapshot: claim %v, error %v", c, err)
	}
	if b.N != 1 {
		b.Fatal("one arrival per store: run with -benchtime 1x")
	}
	{
		b.ResetTimer()
		t0 := time.Now()
		if _, err := s.Publish(ctx, p+"dim", "2000-01-01"); err != nil {
			b.Fatal(err)
		}
		publish := time.Since(t0)
		t1 := time.Now()
		var offered atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, runners)
		for r := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c, err := s.FindNext(ctx, job, fmt.Sprintf("bench-%d", r))
					if err != nil || c == nil {
						errs <- err
						return
					}
					if err := s.Complete(ctx, c.Token); err != nil {
						errs <- err
						return
					}
					offered.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(t1)
		b.StopTimer()
		b.ReportMetric(float64(publish.Microseconds())/1000, "publish-ms")
		b.ReportMetric(float64(offered.Load()), "offered")
		b.ReportMetric(float64(offered.Load())/elapsed.Seconds(), "cycles/s")
		b.ReportMetric(0, "ns/op")
	}
}
