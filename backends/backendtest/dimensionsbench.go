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
	valueCounts, valuePage := countByCustomer(ctx, b, s)
	b.ReportMetric(float64(valueCounts.Milliseconds()), "value-counts-ms")
	b.ReportMetric(float64(valuePage.Milliseconds()), "value-page-ms")

	b.ReportMetric(float64(pages[len(pages)/2].Microseconds()), "page-p50-us")
	b.ReportMetric(float64(slicePages[len(slicePages)/2].Microseconds()), "slice-page-p50-us")
	b.ReportMetric(float64(counts.Milliseconds()), "counts-ms")
	for job, name := range map[string]string{"ingest": "findnext-dims-p50-us", "daily": "findnext-daily-p50-us"} {
		l := lat[job]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), name)
	}
}

// BenchDynamicDimensions is BenchDimensions with a DYNAMIC customer
// dimension: sales is date (DAILY, started ten years ago) × customer
// (DYNAMIC), whose 1,000 customers c0000 ... c0999 are added in ten adds
// of 100, the k-th a backfill from k years after the start (a ragged
// product of about 2 million tuples); beside it days (DAILY) as before. It
// reports, besides the figures of BenchDimensions (findnext-dims-p50-us
// is ingest's over the ragged tuples):
//
//   - add-p50-ms: the p50 of adding 10 customers more, expected from now
//     (ten adds, with the 1,000 there).
func BenchDynamicDimensions(b *testing.B, newStore func(b *testing.B) backends.Store) {
	ctx := context.Background()
	s := newStore(b)
	from := time.Now().UTC().AddDate(-10, 0, 0)
	start := from.Format("2006-01-02")
	deadline := 6 * time.Hour
	dims := partition.Def{Kind: partition.Dimensional, Deadline: &deadline, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: start}},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}}
	mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "sales", Location: "/sales/{customer}/{date}", Partitions: &dims}))
	daily := partition.Def{Kind: partition.Daily, Start: start}
	mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: "days", Location: "/days/{dataid}", Partitions: &daily}))
	for _, j := range []backends.Job{{ID: "ingest", Output: "sales"}, {ID: "daily", Output: "days"}} {
		_, err := s.UpsertJob(ctx, j)
		mustB(b, err)
	}
	customers := make([]string, 1000)
	for i := range customers {
		customers[i] = fmt.Sprintf("c%04d", i)
	}
	for k := range 10 {
		_, err := s.AddPartitions(ctx, "sales", customers[k*100:(k+1)*100], "customer", from.AddDate(k, 0, 0).Format("2006-01-02"))
		mustB(b, err)
	}
	var adds []time.Duration
	for k := range 10 {
		more := make([]string, 10)
		for i := range more {
			more[i] = fmt.Sprintf("n%02d%02d", k, i)
		}
		t := time.Now()
		_, err := s.AddPartitions(ctx, "sales", more, "customer", "")
		adds = append(adds, time.Since(t))
		mustB(b, err)
	}
	slices.Sort(adds)

	lat := alternateFindNext(ctx, b, s, "ingest", "daily")

	var pages, slicePages []time.Duration
	for k := range 100 {
		date := from.AddDate(0, 0, (k*37)%3600).Format("2006-01-02")
		t := time.Now()
		page, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "sales", From: date, First: 100})
		pages = append(pages, time.Since(t))
		mustB(b, err)
		if len(page.Partitions) != 100 {
			b.Fatalf("a page of %d from %s", len(page.Partitions), date)
		}
		// One customer of the first add (expected from the start).
		date = from.AddDate(0, 0, (k*37)%3000).Format("2006-01-02")
		one := []partition.Slice{{Dimension: "customer", Values: []string{customers[(k*7919)%100]}}}
		t = time.Now()
		page, err = s.Partitions(ctx, backends.PartitionFilter{Dataset: "sales", From: date, First: 100, Slice: one})
		slicePages = append(slicePages, time.Since(t))
		mustB(b, err)
		if len(page.Partitions) != 100 {
			b.Fatalf("a slice page of %d from %s", len(page.Partitions), date)
		}
	}
	slices.Sort(pages)
	slices.Sort(slicePages)
	t := time.Now()
	n, err := s.PartitionCounts(ctx, "sales")
	counts := time.Since(t)
	mustB(b, err)
	b.Logf("sales: %d missing, %d late, truncated %v, counted in %s; adds of 10 customers %v", n.Missing, n.Late, n.Truncated, counts, adds)
	valueCounts, valuePage := countByCustomer(ctx, b, s)
	b.ReportMetric(float64(valueCounts.Milliseconds()), "value-counts-ms")
	b.ReportMetric(float64(valuePage.Milliseconds()), "value-page-ms")

	b.ReportMetric(float64(adds[len(adds)/2].Microseconds())/1000, "add-p50-ms")
	b.ReportMetric(float64(pages[len(pages)/2].Microseconds()), "page-p50-us")
	b.ReportMetric(float64(slicePages[len(slicePages)/2].Microseconds()), "slice-page-p50-us")
	b.ReportMetric(float64(counts.Milliseconds()), "counts-ms")
	for job, name := range map[string]string{"ingest": "findnext-dims-p50-us", "daily": "findnext-daily-p50-us"} {
		l := lat[job]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds()), name)
	}
}

// countByCustomer reads the missing and late counts of sales by customer:
// every customer, a page of 100 at a time, and how long the whole took
// and the first page.
func countByCustomer(ctx context.Context, b *testing.B, s backends.Store) (whole, first time.Duration) {
	t := time.Now()
	f := backends.ValueCountFilter{Dataset: "sales", Dimension: "customer", First: backends.MaxValueCountPage}
	listed, behind := 0, 0
	for k := 0; ; k++ {
		page, err := s.ValueCounts(ctx, f)
		mustB(b, err)
		if k == 0 {
			first = time.Since(t)
			behind = page.Behind
		}
		listed += len(page.Counts)
		if !page.HasNextPage {
			break
		}
		f.After = page.Counts[len(page.Counts)-1].Value
	}
	whole = time.Since(t)
	b.Logf("sales by customer: %d values listed, %d behind, in %s (the first page %s)", listed, behind, whole, first)
	return whole, first
}

// BenchFirstDays measures the chunks that read nothing at a value's first
// days (a lookback ending before its output, SPEC §9 and §10): orders,
// date (DAILY, started ten years ago) × customer (DYNAMIC, 1,000 values
// added with a backfill from the start), nothing published; lastweek reads
// the same day a week before, customer by value, so each customer's first
// seven days read nothing. The job is declared on those ten years, and its
// chunks are claimed and completed by findNext until none is left (7,000).
// Then ten customers are added with a backfill of five years and drained
// again (70). It reports first-claims, first-total-ms and
// first-slowest-ms (the slowest findNext, the last one included: it finds
// nothing), then add-claims, add-total-ms. b.N is not used: one pass.
func BenchFirstDays(b *testing.B, newStore func(b *testing.B) backends.Store) {
	ctx := context.Background()
	s := newStore(b)
	start := time.Now().UTC().AddDate(-10, 0, 0).Format("2006-01-02")
	def := partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: start}},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}}
	for _, d := range []string{"orders", "lastweek"} {
		mustB(b, upsertDataset(ctx, s, backends.Dataset{ID: d, Location: "/" + d + "/{customer}/{date}", Partitions: &def}))
	}
	customers := make([]string, 1000)
	for i := range customers {
		customers[i] = fmt.Sprintf("c%04d", i)
	}
	_, err := s.AddPartitions(ctx, "orders", customers, "customer", start)
	mustB(b, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "lastweek", Inputs: []string{"orders"}, Output: "lastweek", InputMappings: []backends.InputMapping{
		{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -7, EndOffset: -7, Dimension: "date", OutputDimension: "date"}}}})
	mustB(b, err)
	drain := func() (int, time.Duration, time.Duration) {
		n, all, slowest := 0, time.Now(), time.Duration(0)
		for {
			t := time.Now()
			c, err := s.FindNext(ctx, "lastweek", "bench")
			slowest = max(slowest, time.Since(t))
			mustB(b, err)
			if c == nil {
				return n, time.Since(all), slowest
			}
			if len(c.Reads) != 0 {
				b.Fatalf("%s reads %v: nothing is published", c.DataID, c.Reads)
			}
			mustB(b, s.Complete(ctx, c.Token))
			n++
		}
	}
	n, total, slowest := drain()
	if n != 7000 {
		b.Fatalf("claimed %d chunks reading nothing, want 7,000", n)
	}
	b.ReportMetric(float64(n), "first-claims")
	b.ReportMetric(float64(total.Milliseconds()), "first-total-ms")
	b.ReportMetric(float64(slowest.Microseconds())/1000, "first-slowest-ms")
	more := make([]string, 10)
	for i := range more {
		more[i] = fmt.Sprintf("new%02d", i)
	}
	_, err = s.AddPartitions(ctx, "orders", more, "customer", time.Now().UTC().AddDate(-5, 0, 0).Format("2006-01-02"))
	mustB(b, err)
	n, total, _ = drain()
	if n != 70 {
		b.Fatalf("claimed %d chunks of the customers added, want 70", n)
	}
	b.ReportMetric(float64(n), "add-claims")
	b.ReportMetric(float64(total.Milliseconds()), "add-total-ms")
}
