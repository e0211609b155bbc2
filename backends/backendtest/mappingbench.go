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

// The mapping benchmark's datasets: raw, a daily source from 1750, read
// one to one by job ident (output ident-out), through a 7-day lookback by
// job roll (roll-out, daily) and through a weekly roll-up by job week
// (week-out, WEEKLY).
var (
	mapBenchDaily  = partition.Def{Kind: partition.Daily, Start: "1750-01-01"}
	mapBenchWeekly = partition.Def{Kind: partition.Weekly, Start: "1750-W01"}
	mapBenchRoll   = partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}
	mapBenchWeek   = partition.Mapping{Kind: partition.TimeWindow}
)

// MappingBenchHistory is the default number of consumed days.
const MappingBenchHistory = 100_000

// SeedMappingBench defines the mapping benchmark's datasets and jobs on s
// and writes, with seed (a bulk write of status rows, not through the
// API), a history of the first history days of raw consumed by all three
// jobs: raw READY; ident's INPUT row DONE and output READY at each day;
// roll's output READY at each day and its seven INPUT rows DONE, each read
// for that day; week's output READY at each week whose days all lie in the
// history and its INPUT rows DONE. It returns the rows written and the
// first day after the history.
func SeedMappingBench(ctx context.Context, s backends.Store, history int, seed RowWriter) (int, string, error) {
	if err := defineMappingBench(ctx, s); err != nil {
		return 0, "", err
	}
	seq, err := mapBenchDaily.Range("", "")
	if err != nil {
		return 0, "", err
	}
	var days []string
	for d := range seq {
		if len(days) == history+1 {
			break
		}
		days = append(days, d)
	}
	next := days[history]
	days = days[:history]
	now := time.Now().UTC()
	row := func(dataset, dataid, job string, role backends.Role, st backends.Status, readFor string) backends.StatusRow {
		r := backends.StatusRow{RowKey: backends.RowKey{Dataset: dataset, DataID: dataid, Job: job, Role: role}, Status: st, UpdatedAt: now}
		if role == backends.RoleInput || job != "" {
			r.Attempt, r.Executor, r.Fence = 1, "seed", 1
		}
		if readFor != dataid {
			r.ReadFor = readFor
		}
		return r
	}
	n := 0
	var batch []backends.StatusRow
	flush := func(force bool) error {
		if len(batch) == 0 || (!force && len(batch) < 2000) {
			return nil
		}
		n += len(batch)
		err := seed(ctx, batch)
		batch = batch[:0]
		return err
	}
	lastWeek := ""
	for _, d := range days {
		batch = append(batch,
			row("raw", d, "", backends.RoleOutput, backends.StatusReady, d),
			row("raw", d, "ident", backends.RoleInput, backends.StatusDone, d),
			row("ident-out", d, "ident", backends.RoleOutput, backends.StatusReady, d),
			row("roll-out", d, "roll", backends.RoleOutput, backends.StatusReady, d))
		reads, err := mapBenchRoll.Inputs(mapBenchDaily, mapBenchDaily, d)
		if err != nil {
			return 0, "", err
		}
		for _, in := range reads {
			batch = append(batch, row("raw", in, "roll", backends.RoleInput, backends.StatusDone, d))
		}
		weeks, err := mapBenchWeek.Outputs(mapBenchWeekly, mapBenchDaily, d)
		if err != nil || len(weeks) != 1 {
			return 0, "", fmt.Errorf("the week of %s: %v %v", d, weeks, err)
		}
		if w := weeks[0]; w != lastWeek {
			lastWeek = w
			ins, err := mapBenchWeek.Inputs(mapBenchWeekly, mapBenchDaily, w)
			if err != nil {
				return 0, "", err
			}
			if last := ins[len(ins)-1]; backends.CompareDataID(last, days[len(days)-1]) <= 0 {
				batch = append(batch, row("week-out", w, "week", backends.RoleOutput, backends.StatusReady, w))
				for _, in := range ins {
					batch = append(batch, row("raw", in, "week", backends.RoleInput, backends.StatusDone, w))
				}
			}
		}
		if err := flush(false); err != nil {
			return 0, "", err
		}
	}
	return n, next, flush(true)
}

// defineMappingBench stores the datasets and jobs of SeedMappingBench.
func defineMappingBench(ctx context.Context, s backends.Store) error {
	for _, d := range []backends.Dataset{
		{ID: "raw", Location: "/raw/{dataid}", Partitions: &mapBenchDaily},
		{ID: "ident-out", Location: "/i/{dataid}", Partitions: &mapBenchDaily},
		{ID: "roll-out", Location: "/r/{dataid}", Partitions: &mapBenchDaily},
		{ID: "week-out", Location: "/w/{dataid}", Partitions: &mapBenchWeekly},
	} {
		if _, err := s.UpsertDataset(ctx, d); err != nil {
			return err
		}
	}
	for _, j := range []backends.Job{
		{ID: "ident", Inputs: []string{"raw"}, Output: "ident-out"},
		{ID: "roll", Inputs: []string{"raw"}, Output: "roll-out", InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: mapBenchRoll}}},
		{ID: "week", Inputs: []string{"raw"}, Output: "week-out", InputMappings: []backends.InputMapping{{Dataset: "raw", Mapping: mapBenchWeek}}},
	} {
		if _, err := s.UpsertJob(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// BenchFindNextMapped measures findNext of the three jobs of
// SeedMappingBench over its history (a partition mapping must cost no more
// than twice what reading one to one costs, SPEC §9): b.N days of raw
// after the history are published one by one (untimed), and after each,
// findNext is timed for each job that has a chunk to claim: ident and roll
// every day, week on the last day of each week; each claim is completed,
// untimed. It reports the p50 and p90 of each job's findNext and the
// ratios of p50 to ident's. next is the first day not published yet; it
// moves on, so that the runs of a benchmark share one store.
func BenchFindNextMapped(b *testing.B, s backends.Store, next *string) {
	ctx := context.Background()
	lat := map[string][]time.Duration{}
	day := *next
	defer func() { *next = day }()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := s.Publish(ctx, "raw", day); err != nil {
			b.Fatal(err)
		}
		weeks, err := mapBenchWeek.Outputs(mapBenchWeekly, mapBenchDaily, day)
		if err != nil {
			b.Fatal(err)
		}
		ins, err := mapBenchWeek.Inputs(mapBenchWeekly, mapBenchDaily, weeks[0])
		if err != nil {
			b.Fatal(err)
		}
		jobs := []struct{ job, want string }{{"ident", day}, {"roll", day}}
		if ins[len(ins)-1] == day {
			jobs = append(jobs, struct{ job, want string }{"week", weeks[0]})
		}
		b.StartTimer()
		for _, j := range jobs {
			t0 := time.Now()
			c, err := s.FindNext(ctx, j.job, "bench")
			lat[j.job] = append(lat[j.job], time.Since(t0))
			if err != nil || c == nil || c.DataID != j.want {
				b.Fatalf("findNext %s after publishing %s: claim %+v, error %v; want %s", j.job, day, c, err, j.want)
			}
			b.StopTimer()
			if err := s.Complete(ctx, c.Token); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.StopTimer()
		var ok bool
		if day, ok = mapBenchDaily.Next(day); !ok {
			b.Fatal("no day after " + day)
		}
		b.StartTimer()
	}
	b.StopTimer()
	p := func(job string, q int) time.Duration {
		l := slices.Clone(lat[job])
		if len(l) == 0 {
			return 0
		}
		slices.Sort(l)
		return l[len(l)*q/100]
	}
	for _, job := range []string{"ident", "roll", "week"} {
		b.ReportMetric(float64(p(job, 50).Nanoseconds()), job+"-p50-ns")
		b.ReportMetric(float64(p(job, 90).Nanoseconds()), job+"-p90-ns")
	}
	if base := p("ident", 50); base > 0 {
		b.ReportMetric(float64(p("roll", 50))/float64(base), "roll/ident")
		b.ReportMetric(float64(p("week", 50))/float64(base), "week/ident")
	}
}
