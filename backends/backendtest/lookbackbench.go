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

// The lookback benchmark (issue 23): hourly datasets read through a
// TIME_WINDOW reaching k hours back (startOffset -k: k = 8,760 is a year).
// Source src is read by job look into look-out; source tick is read one to
// one by job up into mid, which job look2 reads through the same window
// into look2-out. A history of hours is READY on src and mid (seeded in
// bulk, not through the API), so that every new hour completes one window.

// lookbackHourly is the definition of every dataset of the benchmark.
var lookbackHourly = partition.Def{Kind: partition.Hourly, Start: "2020-01-01T00"}

// SeedLookbackBench defines the benchmark's datasets and jobs, reading k
// hours back, and writes, with seed, history READY hours of src and of mid
// (mid's as produced by up, with up's INPUT rows DONE) and of tick. It
// returns the first hour after the history. The jobs' upsert is refused on
// a store that cannot claim k+1 hours in one transaction.
func SeedLookbackBench(ctx context.Context, s backends.Store, k, history int, seed RowWriter) (string, error) {
	for _, id := range []string{"src", "look-out", "tick", "mid", "look2-out"} {
		def := lookbackHourly
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}", Partitions: &def}); err != nil {
			return "", err
		}
	}
	window := func(in string) []backends.InputMapping {
		return []backends.InputMapping{{Dataset: in, Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -k}}}
	}
	for _, j := range []backends.Job{
		{ID: "look", Inputs: []string{"src"}, Output: "look-out", InputMappings: window("src")},
		{ID: "up", Inputs: []string{"tick"}, Output: "mid"},
		{ID: "look2", Inputs: []string{"mid"}, Output: "look2-out", InputMappings: window("mid")},
	} {
		if _, err := s.UpsertJob(ctx, j); err != nil {
			return "", err
		}
	}
	seq, err := lookbackHourly.Range("", "")
	if err != nil {
		return "", err
	}
	now := time.Now().UTC()
	var batch []backends.StatusRow
	n := 0
	for h := range seq {
		if n == history {
			return h, seed(ctx, batch)
		}
		n++
		batch = append(batch,
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "src", DataID: h, Role: backends.RoleOutput}, Status: backends.StatusReady, UpdatedAt: now},
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "tick", DataID: h, Role: backends.RoleOutput}, Status: backends.StatusReady, UpdatedAt: now},
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "tick", DataID: h, Job: "up", Role: backends.RoleInput}, Status: backends.StatusDone,
				Attempt: 1, Executor: "seed", Fence: 1, UpdatedAt: now},
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "mid", DataID: h, Job: "up", Role: backends.RoleOutput}, Status: backends.StatusReady,
				Attempt: 1, Executor: "seed", Fence: 1, UpdatedAt: now})
		if len(batch) >= 2000 {
			if err := seed(ctx, batch); err != nil {
				return "", err
			}
			batch = batch[:0]
		}
	}
	return "", fmt.Errorf("the hourly definition ended before %d hours", history)
}

// LookbackStore opens an empty store of its own for one run of
// BenchLookback (closed when b ends), with the RowWriter that seeds it and
// what to run once it is seeded (nil: nothing).
type LookbackStore func(b *testing.B) (s backends.Store, seed RowWriter, seeded func())

// BenchLookback runs, for k = 1,000 and a year of hours (8,760), on a
// store of its own each seeded with k+1 hours, BenchPublishLookback,
// BenchCompleteUpstream and BenchClaimLookback. A store that refuses the
// jobs (it cannot claim k+1 hours in one transaction) skips that k,
// saying why.
func BenchLookback(b *testing.B, open LookbackStore) {
	for _, k := range []int{1000, 8760} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			s, seed, seeded := open(b)
			next, err := SeedLookbackBench(context.Background(), s, k, k+1, seed)
			if backends.CodeOf(err) == backends.CodeInvalidArgument {
				b.Skipf("refused at upsert: %v", err)
			}
			if err != nil {
				b.Fatal(err)
			}
			if seeded != nil {
				seeded()
			}
			up := next
			b.Run("publish", func(b *testing.B) { BenchPublishLookback(b, s, &next) })
			b.Run("complete-upstream", func(b *testing.B) { BenchCompleteUpstream(b, s, &up) })
			b.Run("claim", func(b *testing.B) { BenchClaimLookback(b, s, k) })
		})
	}
}

// BenchPublishLookback times b.N publishes of the src hours from *next on,
// one by one: each completes the window of look's output at that hour. It
// reports the p50, p90 and slowest publish; *next moves on.
func BenchPublishLookback(b *testing.B, s backends.Store, next *string) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := s.Publish(ctx, "src", *next); err != nil {
			b.Fatalf("publish src/%s: %v", *next, err)
		}
		lat = append(lat, time.Since(t0))
		*next = nextHour(b, *next)
	}
	b.StopTimer()
	reportLatencies(b, "publish", lat)
}

// BenchCompleteUpstream times b.N completions of up's claims at the hours
// from *next on: each makes a mid hour READY, completing the window of
// look2's output at that hour. Publishing the tick hour and claiming it
// are not timed. *next moves on.
func BenchCompleteUpstream(b *testing.B, s backends.Store, next *string) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := s.Publish(ctx, "tick", *next); err != nil {
			b.Fatal(err)
		}
		c, err := s.Claim(ctx, "up", *next, "bench")
		if err != nil {
			b.Fatalf("claim up/%s: %v", *next, err)
		}
		b.StartTimer()
		t0 := time.Now()
		if err := s.Complete(ctx, c.Token); err != nil {
			b.Fatalf("complete up/%s: %v", *next, err)
		}
		lat = append(lat, time.Since(t0))
		*next = nextHour(b, *next)
	}
	b.StopTimer()
	reportLatencies(b, "complete", lat)
}

// BenchClaimLookback times b.N claims of look (findNext, each reading k+1
// src hours) and their completions; the windows must be complete
// already (BenchPublishLookback).
func BenchClaimLookback(b *testing.B, s backends.Store, k int) {
	ctx := context.Background()
	claims := make([]time.Duration, 0, b.N)
	completes := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		c, err := s.FindNext(ctx, "look", "bench")
		claims = append(claims, time.Since(t0))
		if err != nil || c == nil {
			b.Fatalf("findNext look: claim %v, error %v", c, err)
		}
		t0 = time.Now()
		if err := s.Complete(ctx, c.Token); err != nil {
			b.Fatalf("complete look/%s: %v", c.DataID, err)
		}
		completes = append(completes, time.Since(t0))
		if len(c.Reads) != k+1 {
			b.Fatalf("claim look/%s reads %d src hours, want %d", c.DataID, len(c.Reads), k+1)
		}
	}
	b.StopTimer()
	reportLatencies(b, "claim", claims)
	reportLatencies(b, "complete", completes)
}

func nextHour(b *testing.B, h string) string {
	next, ok := lookbackHourly.Next(h)
	if !ok {
		b.Fatal("no hour after " + h)
	}
	return next
}

// reportLatencies reports the p50, p90 and largest of lat in ms, named
// after what.
func reportLatencies(b *testing.B, what string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	l := slices.Clone(lat)
	slices.Sort(l)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(l[len(l)*50/100]), what+"-p50-ms")
	b.ReportMetric(ms(l[len(l)*90/100]), what+"-p90-ms")
	b.ReportMetric(ms(l[len(l)-1]), what+"-max-ms")
}
