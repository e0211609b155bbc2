package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two frontiers of a job at one dataid, reserved by one transaction, the
// second dropped: the first, still reserved, stays (Tx.DropCandidate). The
// frontier left queued must survive: nothing else walks the schedule on.
func TestFrontierKeptByARoundSurvivesItsDroppedTwin(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	due := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	f := &backends.Candidate{Job: "gen", DataID: "2026-01-01T00", Frontier: true, NotBefore: due}
	count := func() int {
		t.Helper()
		n, err := b.CountCandidates(ctx, "gen")
		require.NoError(t, err)
		return n
	}

	_, _, v, err := b.VersionedCatalog(ctx)
	require.NoError(t, err)
	_, v, err = b.PutDataset(ctx, backends.Dataset{ID: "h"}, nil, v)
	require.NoError(t, err)
	_, v, err = b.PutJob(ctx, backends.Job{ID: "gen", Output: "h", MaxAttempts: 3}, true, f, v)
	require.NoError(t, err)
	_, _, err = b.PutDataset(ctx, backends.Dataset{ID: "h", Description: "x"}, []backends.Candidate{*f}, v)
	require.NoError(t, err)
	require.Equal(t, 2, count(), "two frontiers at one dataid")

	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		cs, err := tx.NextCandidates(ctx, "gen", 2, due)
		require.NoError(t, err)
		require.Len(t, cs, 2)
		require.True(t, cs[0].Frontier && cs[1].Frontier)
		// distinctCandidates: the duplicate goes, the first stays reserved
		// and, the gate being full, is not taken.
		return tx.DropCandidate(ctx, cs[1])
	}))
	require.Equal(t, 1, count(), "the frontier the round left queued was deleted with its dropped twin: the schedule has no frontier")
}

// roundGate holds the first Update after arm until release, and notes how
// many candidates each claim round asks for.
type roundGate struct {
	*Backend
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	asked   chan int
}

func (g *roundGate) Update(ctx context.Context, fn func(backends.Tx) error) error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Backend.Update(ctx, func(tx backends.Tx) error { return fn(askingTx{tx.(*txn), g.asked}) })
}

type askingTx struct {
	*txn
	asked chan int
}

func (t askingTx) NextCandidates(ctx context.Context, job string, n int, now time.Time) ([]backends.Candidate, error) {
	select {
	case t.asked <- n:
	default:
	}
	return t.txn.NextCandidates(ctx, job, n, now)
}

// The same through the engine: a scheduled job with maxConcurrent 1 whose
// output's definition changed keeps two frontiers at its first hour
// without a row; while it holds its one claim, two findNext calls served
// in one round take both frontiers away, and once the claim completes the
// job never claims again.
func TestScheduleSurvivesBatchedRoundAtLimit(t *testing.T) {
	ctx := context.Background()
	pb, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer pb.Close()
	g := &roundGate{Backend: pb, entered: make(chan struct{}), release: make(chan struct{}), asked: make(chan int, 64)}
	clock := backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := engine.New(g, engine.WithClock(clock))
	queue := func() int {
		t.Helper()
		n, err := s.QueueLength(ctx, "gen")
		require.NoError(t, err)
		return n
	}

	def := partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00"}
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "h", URL: "s3://lake/h", Location: "dt={dataid}/", Partitions: &def})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "gen", Output: "h", MaxConcurrent: 1})
	require.NoError(t, err)
	// At 01:00 only hour 00 is due: its claim queues nothing ahead of
	// the frontier, which moves to 01.
	clock.Advance(time.Hour)
	held, err := s.FindNext(ctx, "gen", "w0")
	require.NoError(t, err)
	require.NotNil(t, held)
	require.Equal(t, "2026-01-01T00", held.DataID)

	// A definition change that leaves the first hour without a row where
	// it was: the new frontier meets the old one at 01.
	def.End = "2026-01-10T00"
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "h", URL: "s3://lake/h", Location: "dt={dataid}/", Partitions: &def})
	require.NoError(t, err)
	require.Equal(t, 2, queue(), "two frontiers at 01")

	// Three pollers while the job is at its limit: the first round is held
	// so that the other two calls gather into one round. A round that did
	// not gather them proves nothing: try again, a few times at most.
	poll := func(wg *sync.WaitGroup, executor string) {
		defer wg.Done()
		c, err := s.FindNext(ctx, "gen", executor)
		assert.NoError(t, err)
		assert.Nil(t, c, "the job is at its limit")
	}
	batched := false
	for try := 0; try < 5 && !batched; try++ {
		for len(g.asked) > 0 {
			<-g.asked
		}
		g.entered, g.release = make(chan struct{}), make(chan struct{})
		g.armed.Store(true)
		var wg sync.WaitGroup
		wg.Add(1)
		go poll(&wg, "w1")
		<-g.entered
		wg.Add(2)
		go poll(&wg, "w2")
		go poll(&wg, "w3")
		time.Sleep(200 * time.Millisecond) // lets w2 and w3 queue behind w1's round
		close(g.release)
		wg.Wait()
		for len(g.asked) > 0 {
			batched = batched || <-g.asked >= 2
		}
	}
	require.True(t, batched, "no round served two calls in five tries; the scenario did not happen")
	require.Equal(t, 2, queue(), "the rounds at the limit kept both frontiers")

	require.NoError(t, s.Complete(ctx, held.Token))
	require.GreaterOrEqual(t, queue(), 1, "the scheduled job has no frontier left")
	clock.Advance(2 * time.Hour)
	next, err := s.FindNext(ctx, "gen", "w0")
	require.NoError(t, err)
	require.NotNil(t, next, "the schedule stopped: hour 01 is due and free")
	require.Equal(t, "2026-01-01T01", next.DataID)
}
