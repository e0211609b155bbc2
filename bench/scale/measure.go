package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// sample collects latencies.
type sample struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sample) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// quantile returns the q-quantile (0 for an empty sample).
func (s *sample) quantile(q float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.d) == 0 {
		return 0
	}
	v := slices.Clone(s.d)
	slices.Sort(v)
	return v[int(q*float64(len(v)-1))]
}

func (s *sample) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d)
}

// trafficConfig is the load run on a store while its pages are timed.
type trafficConfig struct {
	runners  int           // runners cycling findNext -> complete over the jobs
	rate     float64       // publishes a second, over the sources in turn
	duration time.Duration // how long
}

// trafficResult is what the traffic measured.
type trafficResult struct {
	findNext, findNone, complete, publish sample // findNone: findNext answered null
	chunksPage, partitionsPage            sample
	errors                                int
	firstErr                              error
}

// runTraffic publishes new hours of the sources at cfg.rate while
// cfg.runners runners claim and complete whatever their jobs may claim
// (runner r serves jobs r, r+R, ...), and a reader times a page of
// `chunks` and a page of `partitions` of a random dataset from a random
// hour, one after the other, with a pause of 100 ms between requests.
func runTraffic(ctx context.Context, a *api, l layout, cfg trafficConfig, progress io.Writer) *trafficResult {
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	res := &trafficResult{}
	var mu sync.Mutex
	fail := func(err error) {
		if err == nil || ctx.Err() != nil {
			return
		}
		mu.Lock()
		res.errors++
		if res.firstErr == nil {
			res.firstErr = err
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Go(func() { publisher(ctx, a, l, cfg.rate, res, fail) })
	for r := range cfg.runners {
		wg.Go(func() { runner(ctx, a, l, r, cfg.runners, res, fail) })
	}
	wg.Go(func() { pageReader(ctx, a, l, res, fail) })
	t0 := time.Now()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			fmt.Fprintf(progress, "traffic: %s, %d publishes, %d cycles, %d pages, %d errors\n", time.Since(t0).Round(time.Second),
				res.publish.n(), res.complete.n(), res.chunksPage.n()+res.partitionsPage.n(), res.errors)
		}
	}
	wg.Wait()
	return res
}

// publisher publishes hour `hours` of every source, then the next, at
// rate publishes a second, up to l.spare hours.
func publisher(ctx context.Context, a *api, l layout, rate float64, res *trafficResult, fail func(error)) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for n := 0; n < l.spare*l.pairs; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d, err := a.timed(ctx, `mutation($d: String!, $i: String!) { publish(dataset: $d, dataid: $i) { status } }`,
			map[string]any{"d": l.source(n % l.pairs), "i": l.dataid(l.hours + n/l.pairs)}, nil)
		if err != nil {
			fail(fmt.Errorf("publish: %w", err))
			continue
		}
		res.publish.add(d)
	}
}

// runner claims and completes the chunks of its jobs, going round them;
// after a round that claimed nothing it waits 50 ms.
func runner(ctx context.Context, a *api, l layout, r, runners int, res *trafficResult, fail func(error)) {
	exec := fmt.Sprintf("scale-runner-%d", r)
	for ctx.Err() == nil {
		claimed := false
		for i := r; i < l.pairs && ctx.Err() == nil; i += runners {
			var out struct{ FindNext *struct{ Token string } }
			d, err := a.timed(ctx, `mutation($j: String!, $e: String!) { findNext(job: $j, executor: $e) { token } }`,
				map[string]any{"j": l.job(i), "e": exec}, &out)
			if err != nil {
				fail(fmt.Errorf("findNext: %w", err))
				pause(ctx, 100*time.Millisecond)
				continue
			}
			if out.FindNext == nil {
				res.findNone.add(d)
				continue
			}
			res.findNext.add(d)
			claimed = true
			d, err = a.timed(ctx, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": out.FindNext.Token}, nil)
			if err != nil {
				fail(fmt.Errorf("complete: %w", err))
				continue
			}
			res.complete.add(d)
		}
		if !claimed {
			pause(ctx, 50*time.Millisecond)
		}
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// The pages the reader asks for: 100 rows or partitions, as a listing
// in the dashboard or a script would.
const (
	chunksPageDoc = `query($d: String!, $f: String!) { chunks(dataset: $d, from: $f, first: 100) {
		edges { node { dataset dataid job role status attempt executor updatedAt } } pageInfo { hasNextPage endCursor } } }`
	partitionsPageDoc = `query($d: String!, $f: String!) { partitions(dataset: $d, from: $f, first: 100) {
		edges { node { dataid status windowStart windowEnd dueAt late } } pageInfo { hasNextPage endCursor } } }`
)

func pageReader(ctx context.Context, a *api, l layout, res *trafficResult, fail func(error)) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for ctx.Err() == nil {
		i := rnd.IntN(l.pairs)
		ds := l.source(i)
		if rnd.IntN(2) == 1 {
			ds = l.product(i)
		}
		vars := map[string]any{"d": ds, "f": l.dataid(rnd.IntN(l.hours))}
		d, err := a.timed(ctx, chunksPageDoc, vars, nil)
		if err != nil {
			fail(fmt.Errorf("chunks page: %w", err))
		} else {
			res.chunksPage.add(d)
		}
		time.Sleep(100 * time.Millisecond)
		d, err = a.timed(ctx, partitionsPageDoc, vars, nil)
		if err != nil {
			fail(fmt.Errorf("partitions page: %w", err))
		} else {
			res.partitionsPage.add(d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
