package bench

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/chunklock/chunklock/backends"
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

// RunPool drives one runner with slots slots through the pipeline, as a
// runner pool (runner/pool.go) drives its slots: it claims for all its
// free slots with one claimNext; the work is a no-op, so the slots are
// free again at once, and their endings go in one completeMany in the
// background while the next claimNext is on its way. At most one
// completeMany is in flight: what is claimed meanwhile goes with the next
// one (at most backends.MaxManyTokens a call); as in the runner pool, at
// most slots + backends.MaxManyTokens claims are not ended at any time. A cycle is one chunk
// claimed and completed; FindNext and Complete are the latencies of the
// batch calls; the run ends when nothing is left to claim and every claim
// is completed.
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
	type ended struct {
		tokens []string
		took   time.Duration
		err    error
	}
	endedC := make(chan ended, 1)
	var pending []string // claimed, not yet sent to completeMany
	inFlight, sending := false, 0
	send := func() {
		if inFlight || len(pending) == 0 {
			return
		}
		batch := pending
		if len(batch) > backends.MaxManyTokens {
			batch = batch[:backends.MaxManyTokens]
		}
		pending = pending[len(batch):]
		inFlight, sending = true, len(batch)
		go func() {
			t0 := time.Now()
			err := d.CompleteMany(ctx, batch)
			endedC <- ended{batch, time.Since(t0), err}
		}()
	}
	collect := func(e ended) {
		inFlight, sending = false, 0
		if e.err != nil {
			errs++
			pending = append(pending, e.tokens...) // a repeated completion answers as the first (SPEC §3)
			return
		}
		complete = append(complete, e.took)
		cycles.Add(int64(len(e.tokens)))
	}
	start := time.Now()
	var err error
	drained := false
	for errs <= 100 {
		select {
		case e := <-endedC:
			collect(e)
		default:
		}
		if drained {
			if !inFlight && len(pending) == 0 {
				break
			}
			send()
			if inFlight {
				e := <-endedC
				collect(e)
				if e.err != nil {
					err = e.err
				}
			}
			continue
		}
		free := min(slots, slots+backends.MaxManyTokens-len(pending)-sending)
		if free <= 0 {
			collect(<-endedC) // as the runner pool: at most a call's worth waiting
			send()
			continue
		}
		t0 := time.Now()
		var tokens []string
		if tokens, err = d.ClaimNext(ctx, p.Job, "bench-pool", free); err != nil {
			errs++
			continue
		}
		err = nil
		find = append(find, time.Since(t0))
		if len(tokens) == 0 {
			drained = true
			continue
		}
		pending = append(pending, tokens...)
		send()
	}
	res := Result{Runners: slots, Cycles: int(cycles.Load()), Elapsed: time.Since(start),
		FindNext: summarise(find), Complete: summarise(complete), Errors: errs}
	if errs > 100 {
		return res, fmt.Errorf("more than 100 errors, last kept: %w", err)
	}
	return res, nil
}
