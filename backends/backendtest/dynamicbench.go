package backendtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// EnvDynamicValues sets how many values BenchDynamic fills its set with
// (default 100,000; BENCHMARKS.md measures 1,000,000).
const EnvDynamicValues = "CHUNKLOCK_BENCH_DYNAMIC_VALUES"

// BenchDynamic measures a DYNAMIC dataset holding many values (SPEC §10:
// listing a page, findNext and an add stay flat), on one store from
// newStore: dataset files (DYNAMIC, values f0000000, f0000001, ...) written
// by ingest, without inputs, and beside it days (DAILY, started ten years
// ago) written by daily, without inputs. It reports:
//
//   - fill-s: the time to add the values, in calls of 10,000;
//   - add10k-ms: the median of three more adds of 10,000 new values;
//   - page-p50-us: the p50 of a partitions page of 100 values, each after
//     a cursor spread over the set;
//   - findnext-dyn-p50-us and findnext-daily-p50-us: the p50 of findNext
//     on ingest and on daily, taken in alternating runs of 50 claims (each
//     completed, untimed), b.N claims each.
func BenchDynamic(b *testing.B, newStore func(b *testing.B) backends.Store) {
	ctx := context.Background()
	size := 100000
	if v := os.Getenv(EnvDynamicValues); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive count", EnvDynamicValues, v)
		}
		size = n
	}
	s := newStore(b)
	def := partition.Def{Kind: partition.Dynamic}
	mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "files", Location: "/files/{dataid}", Partitions: &def}))
	start := time.Now().UTC().AddDate(-10, 0, 0)
	daily := partition.Def{Kind: partition.Daily, Start: start.Format("2006-01-02")}
	mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "days", Location: "/days/{dataid}", Partitions: &daily}))
	for _, j := range []backends.Job{{ID: "ingest", Output: "files"}, {ID: "daily", Output: "days"}} {
		_, err := s.UpsertJob(ctx, j)
		mustB(b, err)
	}
	value := func(i int) string { return fmt.Sprintf("f%07d", i) }
	batch := func(from, n int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = value(from + i)
		}
		return ids
	}
	t0 := time.Now()
	for i := 0; i < size; i += backends.MaxPartitionValues {
		n := min(backends.MaxPartitionValues, size-i)
		res, err := s.AddPartitions(ctx, "files", batch(i, n), "", "")
		mustB(b, err)
		if res.Changed != n {
			b.Fatalf("added %d of %d", res.Changed, n)
		}
	}
	fill := time.Since(t0)
	b.Logf("filled %d values in %s", size, fill)

	var adds []time.Duration
	for k := range 3 {
		t := time.Now()
		res, err := s.AddPartitions(ctx, "files", batch(size+k*backends.MaxPartitionValues, backends.MaxPartitionValues), "", "")
		adds = append(adds, time.Since(t))
		mustB(b, err)
		if res.Changed != backends.MaxPartitionValues {
			b.Fatalf("added %d", res.Changed)
		}
	}
	slices.Sort(adds)
	b.Logf("adds of 10,000: %v", adds)

	var pages []time.Duration
	for k := range 200 {
		after := value((k * 7919 * 13) % size)
		t := time.Now()
		page, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "files", After: after, First: 100})
		pages = append(pages, time.Since(t))
		mustB(b, err)
		if len(page.Partitions) == 0 {
			b.Fatalf("an empty page after %s", after)
		}
	}
	slices.Sort(pages)
	b.Logf("partitions page p50 %s", pages[len(pages)/2])

	lat := alternateFindNext(ctx, b, s, "ingest", "daily")
	b.ReportMetric(fill.Seconds(), "fill-s")
	b.ReportMetric(float64(adds[1].Milliseconds()), "add10k-ms")
	b.ReportMetric(float64(pages[len(pages)/2].Microseconds()), "page-p50-us")
	for job, name := range map[string]string{"ingest": "findnext-dyn-p50-us", "daily": "findnext-daily-p50-us"} {
		l := lat[job]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), name)
	}
}

// alternateFindNext times b.N findNext calls on each job, in alternating
// runs of 50 claims (each completed, untimed), and returns the latencies
// by job.
func alternateFindNext(ctx context.Context, b *testing.B, s backends.Store, jobs ...string) map[string][]time.Duration {
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for done := 0; done < b.N; done += 50 {
		for _, job := range jobs {
			for range min(50, b.N-done) {
				t := time.Now()
				c, err := s.FindNext(ctx, job, "bench")
				lat[job] = append(lat[job], time.Since(t))
				if err != nil || c == nil {
					b.Fatalf("findNext %s: claim %v, error %v", job, c, err)
				}
				b.StopTimer()
				mustB(b, s.Complete(ctx, c.Token))
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	return lat
}
