// Package bench measures how many chunks a second runners move through
// chunklock: R concurrent runners doing findNext → complete cycles against
// a Store directly or through the GraphQL API, with latency percentiles,
// and the raw write limits of the underlying store for comparison.
package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Driver is one way to reach chunklock: the Store itself or the HTTP API.
type Driver interface {
	// FindNext claims the next chunk; ok is false when none is left.
	FindNext(ctx context.Context, job, executor string) (token string, ok bool, err error)
	Complete(ctx context.Context, token string) error
}

// StoreDriver drives a Store directly.
type StoreDriver struct{ Store backends.Store }

func (d StoreDriver) FindNext(ctx context.Context, job, executor string) (string, bool, error) {
	c, err := d.Store.FindNext(ctx, job, executor)
	if err != nil || c == nil {
		return "", false, err
	}
	return c.Token, true, nil
}

func (d StoreDriver) Complete(ctx context.Context, token string) error {
	return d.Store.Complete(ctx, token)
}

// Pipeline is what a run works on: one source dataset with Chunks READY
// chunks and one job reading it.
type Pipeline struct {
	Job    string
	Chunks int
}

// Setup creates a fresh pipeline named after prefix and publishes chunks
// chunks into its source, reporting progress to w.
func Setup(ctx context.Context, s backends.Store, prefix string, chunks int, w io.Writer) (Pipeline, error) {
	return SetupLimited(ctx, s, prefix, chunks, Limits{}, w)
}

// Limits are the concurrency limits of the benchmark job: its
// maxConcurrent, and the slots of a pool of its own (0: none).
type Limits struct {
	MaxConcurrent int
	PoolSlots     int
}

// SetupLimited is Setup with the job's concurrency limits.
func SetupLimited(ctx context.Context, s backends.Store, prefix string, chunks int, lim Limits, w io.Writer) (Pipeline, error) {
	src, out, job := prefix+"-src", prefix+"-out", prefix+"-job"
	for _, d := range []string{src, out} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/bench/" + d + "/{dataid}"}); err != nil {
			return Pipeline{}, err
		}
	}
	j := backends.Job{ID: job, Inputs: []string{src}, Output: out, LeaseSeconds: 600, MaxConcurrent: lim.MaxConcurrent}
	if lim.PoolSlots > 0 {
		j.Pool = prefix + "-pool"
		if _, err := s.UpsertPool(ctx, backends.Pool{ID: j.Pool, Slots: lim.PoolSlots}); err != nil {
			return Pipeline{}, err
		}
	}
	if _, err := s.UpsertJob(ctx, j); err != nil {
		return Pipeline{}, err
	}
	// Publishing is setup, not measured; do it with a few workers.
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(chunks) {
					return
				}
				if _, err := s.Publish(ctx, src, strconv.FormatInt(i, 10)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return Pipeline{}, fmt.Errorf("publishing: %w", err)
	}
	return Pipeline{Job: job, Chunks: chunks}, nil
}

// Result is what one run measured.
type Result struct {
	Runners  int
	Cycles   int
	Elapsed  time.Duration
	FindNext Latencies
	Complete Latencies
	Errors   int
}

// CyclesPerSecond is completed findNext → complete cycles per second.
func (r Result) CyclesPerSecond() float64 { return float64(r.Cycles) / r.Elapsed.Seconds() }

// Latencies summarises a latency sample.
type Latencies struct {
	P50, P99, Max time.Duration
	N             int
}

func summarise(sample []time.Duration) Latencies {
	if len(sample) == 0 {
		return Latencies{}
	}
	slices.Sort(sample)
	at := func(q float64) time.Duration { return sample[int(q*float64(len(sample)-1))] }
	return Latencies{P50: at(0.50), P99: at(0.99), Max: sample[len(sample)-1], N: len(sample)}
}

// Run drives runners concurrent runners through findNext → complete cycles
// until the pipeline is drained or limit cycles are done (0: no limit),
// printing progress to w every second.
func Run(ctx context.Context, d Driver, p Pipeline, runners, limit int, w io.Writer) (Result, error) {
	var cycles, errCount atomic.Int64
	type sample struct{ find, complete []time.Duration }
	samples := make([]sample, runners)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := fmt.Sprintf("bench-%d", r)
			for ctx.Err() == nil {
				if limit > 0 && cycles.Load() >= int64(limit) {
					return
				}
				t0 := time.Now()
				token, ok, err := d.FindNext(ctx, p.Job, exec)
				t1 := time.Now()
				if err != nil {
					if errCount.Add(1) > 100 {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					continue
				}
				if !ok {
					return
				}
				if err := d.Complete(ctx, token); err != nil {
					if errCount.Add(1) > 100 {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					continue
				}
				t2 := time.Now()
				samples[r].find = append(samples[r].find, t1.Sub(t0))
				samples[r].complete = append(samples[r].complete, t2.Sub(t1))
				cycles.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := int64(0)
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
			n := cycles.Load()
			fmt.Fprintf(w, "  R=%-3d %7d cycles  %7.0f/s\n", runners, n, float64(n-last))
			last = n
		}
	}
	elapsed := time.Since(start)
	var find, complete []time.Duration
	for _, s := range samples {
		find = append(find, s.find...)
		complete = append(complete, s.complete...)
	}
	res := Result{Runners: runners, Cycles: int(cycles.Load()), Elapsed: elapsed,
		FindNext: summarise(find), Complete: summarise(complete), Errors: int(errCount.Load())}
	if firstErr != nil {
		return res, fmt.Errorf("more than 100 errors, first kept: %w", firstErr)
	}
	return res, nil
}
