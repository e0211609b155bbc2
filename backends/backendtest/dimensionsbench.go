package backendtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// BenchDimensions measures a two-dimensional dataset at the size SPEC §10's
// users have: sales, date (DAILY, started ten years ago) × customer
// (STATIC, 1,000 values c0000 ... c0999), 3.65 million expected tuples,
// written by ingest, without inputs; beside it days (DAILY, the same
// start) written by daily. It reports:
//
//   - findnext-dims-p50-us and findnext-daily-p50-us: the p50 of findNext
//     on ingest and on daily, in alternating runs of 50 claims (each
//     completed, untimed), b.N claims each;
//   - page-p50-us: the p50 of a partitions page of 100 tuples of sales
//     from a date spread over the ten years;
//   - slice-page-p50-us: the same, of one customer's tuples (a slice:
//     100 dates, each a point read);
//   - counts-ms: one PartitionCounts of sales (missing and late).
func BenchDimensions(b *testing.B, newStore func(b *testing.B) backends.Store) {
	ctx := context.Background()
	s := newStore(b)
	start := time.Now().UTC().AddDate(-10, 0, 0).Format("2006-01-02")
	customers := make([]string, 1000)
	for i := range customers {
		customers[i] = fmt.Sprintf("c%04d", i)
	}
	deadline := 6 * time.Hour
	dims := partition.Def{Kind: partition.Dimensional, Deadline: &deadline, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: start}},
		{Name: "customer", Def: partition.Def{Kind: partition.Static, Values: customers}},
	}}
	mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "sales", Location: "/sales/{customer}/{date}", Partitions: &dims}))
	daily := partition.Def{Kind: partition.Daily, Start: start}
	mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "days", Location: "/days/{dataid}", Partitions: &daily}))
	for _, j := range []backends.Job{{ID: "ingest", Output: "sales"}, {ID: "daily", Output: "days"}} {
		_, err := s.UpsertJob(ctx, j)
		mustB(b, err)
	}

	lat := alternateFindNext(ctx, b, s, "ingest", "daily")

	var pages []time.Duration
	from, err := time.Parse("2006-01-02", start)
	mustB(b, err)
	for k := range 100 {
		date := from.AddDate(0, 0, (k*37)%3600).Format("2006-01-02")
		t := time.Now()
		page, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "sales", From: date, First: 100})
		pages = append(pages, time.Since(t))
		mustB(b, err)
		if len(page.Partitions) != 100 {
			b.Fatalf("a page of %d from %s", len(page.Partitions), date)
		}
	}
	slices.Sort(pages)
	var slicePages []time.Duration
	for k := range 100 {
		date := from.AddDate(0, 0, (k*37)%3000).Format("2006-01-02")
		one := []partition.Slice{{Dimension: "customer", Values: []string{customers[(k*7919)%len(customers)]}}}
		t := time.Now()
		page, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "sales", From: date, First: 100, Slice: one})
		slicePages = append(slicePages, time.Since(t))
		mustB(b, err)
		if len(page.Partitions) != 100 {
			b.Fatalf("a slice page of %d from %s", len(page.Partitions), date)
		}
	}
	slices.Sort(slicePages)
	t := time.Now()
	n, err := s.PartitionCounts(ctx, "sales")
	counts := time.Since(t)
	mustB(b, err)
	b.Logf("sales: %d missing, %d late, truncated %v, counted in %s", n.Missing, n.Late, n.Truncated, counts)

	b.ReportMetric(float64(pages[len(pages)/2].Microseconds()), "page-p50-us")
	b.ReportMetric(float64(slicePages[len(slicePages)/2].Microseconds()), "slice-page-p50-us")
	b.ReportMetric(float64(counts.Milliseconds()), "counts-ms")
	for job, name := range map[string]string{"ingest": "findnext-dims-p50-us", "daily": "findnext-daily-p50-us"} {
		l := lat[job]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), name)
	}
}
