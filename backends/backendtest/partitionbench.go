package backendtest

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The partitions benchmark (issue 14): a DAILY dataset with ten years of
// expected dataids in a store holding 100,000 chunks.

// PartitionBenchChunks is how many chunks (OUTPUT rows) the benchmark's
// store holds.
const PartitionBenchChunks = 100_000

// PartitionBenchClock is where the benchmark's clock stands: ten years of
// days, 2016-01-01 to 2025-12-31 (3,653), are due, and past their deadline.
var PartitionBenchClock = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// RowWriter writes status rows straight into a backend's storage (bulk
// seeding, not through the API).
type RowWriter func(ctx context.Context, rows []backends.StatusRow) error

// TxRows is a RowWriter putting the rows in one transaction of be (for a
// backend without a faster bulk path: the in-memory one).
func TxRows(be backends.Backend) RowWriter {
	return func(ctx context.Context, rows []backends.StatusRow) error {
		return be.Update(ctx, func(tx backends.Tx) error {
			for _, r := range rows {
				if err := tx.PutRow(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// SeedPartitionBench defines, on an empty store whose clock stands at
// PartitionBenchClock, the DAILY source "daily" (from 2016-01-01, deadline
// one day), job "j" reading it into the DAILY dataset "out", and the
// INTEGER source "ints"; then it writes, with put, "daily" READY on nine
// days in ten (its tenth days missing), j's INPUT DONE and "out" READY on
// the same days, and "ints" READY on as many dataids as it takes to reach
// PartitionBenchChunks chunks. It returns the number of rows written.
func SeedPartitionBench(ctx context.Context, s backends.Store, put RowWriter) (int, error) {
	deadline := 24 * time.Hour
	daily := partition.Def{Kind: partition.Daily, Start: "2016-01-01", Deadline: &deadline}
	for _, d := range []backends.Dataset{
		{ID: "daily", Location: "/daily/{dataid}", Partitions: &daily},
		{ID: "out", Location: "/out/{dataid}", Partitions: &daily},
		{ID: "ints", Location: "/ints/{dataid}", Partitions: &partition.Def{Kind: partition.Integer}},
	} {
		if _, err := s.UpsertDataset(ctx, d); err != nil {
			return 0, err
		}
	}
	if _, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"daily"}, Output: "out"}); err != nil {
		return 0, err
	}
	now := PartitionBenchClock
	var rows []backends.StatusRow
	flush := func(force bool) error {
		if len(rows) < 1000 && !(force && len(rows) > 0) {
			return nil
		}
		err := put(ctx, rows)
		rows = rows[:0]
		return err
	}
	written, chunks := 0, 0
	day := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; day.Before(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); i, day = i+1, day.AddDate(0, 0, 1) {
		if i%10 == 9 {
			continue
		}
		id := day.Format(time.DateOnly)
		tok := backends.NewToken("j", "out", id, 1)
		rows = append(rows,
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "daily", DataID: id, Role: backends.RoleOutput}, Status: backends.StatusReady, UpdatedAt: now},
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "daily", DataID: id, Job: "j", Role: backends.RoleInput}, Status: backends.StatusDone, Attempt: 1, Executor: "seed", Token: tok, Fence: 1, UpdatedAt: now},
			backends.StatusRow{RowKey: backends.RowKey{Dataset: "out", DataID: id, Job: "j", Role: backends.RoleOutput}, Status: backends.StatusReady, Attempt: 1, Executor: "seed", Token: tok, Fence: 1, UpdatedAt: now})
		written, chunks = written+3, chunks+2
		if err := flush(false); err != nil {
			return written, err
		}
	}
	for i := 0; chunks < PartitionBenchChunks; i, chunks = i+1, chunks+1 {
		rows = append(rows, backends.StatusRow{RowKey: backends.RowKey{Dataset: "ints", DataID: strconv.Itoa(i), Role: backends.RoleOutput}, Status: backends.StatusReady, UpdatedAt: now})
		written++
		if err := flush(false); err != nil {
			return written, err
		}
	}
	return written, flush(true)
}

// BenchPartitions measures pages of partitions of "daily" on a store seeded
// by SeedPartitionBench: b.N pages of 500 from a random day of the ten
// years, unfiltered (the target: p50 <= 20 ms), then the same number with
// status NONE (missing: one day in ten) and PartitionCounts of "daily".
// It reports p50 and p90 of each in milliseconds.
func BenchPartitions(b *testing.B, s backends.Store) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	days := 3653
	start := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	cursor := func() string {
		return start.AddDate(0, 0, rng.IntN(days-500)).Format(time.DateOnly)
	}
	missing := backends.StatusNone
	for _, tc := range []struct {
		name string
		call func() (int, error)
	}{
		{"page500", func() (int, error) {
			p, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "daily", First: 500, After: cursor()})
			return len(p.Partitions), err
		}},
		{"page500-missing", func() (int, error) {
			p, err := s.Partitions(ctx, backends.PartitionFilter{Dataset: "daily", First: 500, After: cursor(), Status: &missing})
			return len(p.Partitions), err
		}},
		{"counts", func() (int, error) {
			c, err := s.PartitionCounts(ctx, "daily")
			return c.Missing, err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				n, err := tc.call()
				lat = append(lat, time.Since(t0))
				if err != nil || n == 0 {
					b.Fatalf("%s: %d partitions, error %v", tc.name, n, err)
				}
			}
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*9/10]), "p90-ms")
		})
	}
}
