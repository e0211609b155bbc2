package bench

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// PoolDriver is a way to reach chunklock that claims and ends in batches
// (runner pools).
type PoolDriver interface {
	// ClaimNext claims up to max chunks; none when none is left.
	ClaimNext(ctx context.Context, job, executor string, max int) (tokens []string, err error)
	// CompleteMany completes every claim; an error when any was not.
	CompleteMany(ctx context.Context, tokens []string) error
}

func (d StoreDriver) ClaimNext(ctx context.Context, job, executor string, max int) ([]string, error) {
	cs, err := d.Store.ClaimNext(ctx, job, executor, max)
	tokens := make([]string, len(cs))
	for i, c := range cs {
		tokens[i] = c.Token
	}
	return tokens, err
}

func (d StoreDriver) CompleteMany(ctx context.Context, tokens []string) error {
	res, err := d.Store.CompleteMany(ctx, tokens)
	if err != nil {
		return err
	}
	for _, r := range res {
		if !r.OK() {
			return fmt.Errorf("completing %s: %w", r.Token, r.Err)
		}
	}
	return nil
}

var _ PoolDriver = StoreDriver{}

// RunPool drives one runner with slots slots through the pipeline: it
// claims for all its slots with one claimNext, completes what it got with
// one completeMany (no-op work), and again, until nothing is left. A
// cycle is one chunk claimed and completed; FindNext and Complete are the
// latencies of the batch calls.
func RunPool(ctx context.Context, d PoolDriver, p Pipeline, slots int, w io.Writer) (Result, error) {
	var cycles atomic.Int64
	var find, complete []time.Duration
	errs := 0
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := int64(0)
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				n := cycles.Load()
				fmt.Fprintf(w, "  pool R=%-3d %7d cycles  %7.0f/s\n", slots, n, float64(n-last))
				last = n
			}
		}
	}()
	start := time.Now()
	var err error
	for errs <= 100 {
		t0 := time.Now()
		var tokens []string
		if tokens, err = d.ClaimNext(ctx, p.Job, "bench-pool", slots); err != nil {
			errs++
			continue
		}
		if len(tokens) == 0 {
			err = nil
			break
		}
		t1 := time.Now()
		if err = d.CompleteMany(ctx, tokens); err != nil {
			errs++
			continue
		}
		find, complete = append(find, t1.Sub(t0)), append(complete, time.Since(t1))
		cycles.Add(int64(len(tokens)))
	}
	res := Result{Runners: slots, Cycles: int(cycles.Load()), Elapsed: time.Since(start),
		FindNext: summarise(find), Complete: summarise(complete), Errors: errs}
	if err != nil {
		return res, fmt.Errorf("more than 100 errors, last kept: %w", err)
	}
	return res, nil
}
