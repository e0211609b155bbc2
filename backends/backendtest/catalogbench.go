package backendtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// CatalogBenchJobs is how many jobs BenchCatalogWrites creates: 10,000, or
// CHUNKLOCK_BENCH_CATALOG_JOBS (at least 2,000).
func CatalogBenchJobs(b *testing.B) int {
	v := os.Getenv("CHUNKLOCK_BENCH_CATALOG_JOBS")
	if v == "" {
		return 10_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2000 {
		b.Fatalf("CHUNKLOCK_BENCH_CATALOG_JOBS=%q: want a number of at least 2000", v)
	}
	return n
}

// catalogBenchWriters is how many goroutines write the catalog at once.
const catalogBenchWriters = 8

// BenchCatalogWrites creates jobs jobs on an empty store, each with two
// datasets of its own (an input and an output), from 8 goroutines, each
// step being two UpsertDataset calls and one UpsertJob. It reports the
// wall time per job of the first thousand jobs and of the last thousand
// (ms/job-first1k, ms/job-last1k) and their ratio (last/first): a catalog
// write should cost the same whatever the size of the catalog.
func BenchCatalogWrites(b *testing.B, s backends.Store, jobs int) {
	ctx := context.Background()
	var (
		next, done atomic.Int64
		mu         sync.Mutex
		marks      = map[int64]time.Time{}
		firstErr   error
		wg         sync.WaitGroup
	)
	mark := func(n int64) {
		if n == 1000 || n == int64(jobs-1000) || n == int64(jobs) {
			mu.Lock()
			marks[n] = time.Now()
			mu.Unlock()
		}
	}
	b.ResetTimer()
	start := time.Now()
	for range catalogBenchWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(jobs) {
					return
				}
				if err := catalogStep(ctx, s, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mark(done.Add(1))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	perJob := func(from, to time.Time) float64 { return float64(to.Sub(from).Microseconds()) / 1000 / 1000 }
	first := perJob(start, marks[1000])
	last := perJob(marks[int64(jobs-1000)], marks[int64(jobs)])
	b.ReportMetric(first, "ms/job-first1k")
	b.ReportMetric(last, "ms/job-last1k")
	b.ReportMetric(last/first, "last/first")
}

// catalogStep creates job i with its input and output datasets.
func catalogStep(ctx context.Context, s backends.Store, i int64) error {
	in, out := fmt.Sprintf("in-%05d", i), fmt.Sprintf("out-%05d", i)
	for _, d := range []string{in, out} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: d}); err != nil {
			return fmt.Errorf("dataset %s: %w", d, err)
		}
	}
	if _, err := s.UpsertJob(ctx, backends.Job{ID: fmt.Sprintf("job-%05d", i), Inputs: []string{in}, Output: out}); err != nil {
		return fmt.Errorf("job %d: %w", i, err)
	}
	return nil
}
