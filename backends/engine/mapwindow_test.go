package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// memTx is what the memory backend's transactions implement.
type memTx interface {
	backends.Tx
	backends.LiveCounter
}

// countingReads counts the status rows its transactions read.
type countingReads struct {
	*memory.Backend
	rows atomic.Int64
}

type countedTx struct {
	memTx
	rows *atomic.Int64
}

func (c countedTx) GetRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	c.rows.Add(int64(len(keys)))
	return c.memTx.GetRows(ctx, keys)
}

func (c *countingReads) Update(ctx context.Context, fn func(backends.Tx) error) error {
	return c.Backend.Update(ctx, func(tx backends.Tx) error { return fn(countedTx{memTx: tx.(memTx), rows: &c.rows}) })
}

// TestWideLookbackReadsLinearly: under a TIME_WINDOW reaching k hours back,
// making one hour READY (a publish, and a completion of the job producing
// the input) reads a number of rows that grows with k, not with k×k: it
// must not list the windows of the k+1 outputs that read the hour one by
// one. The window it completes is queued all the same.
func TestWideLookbackReadsLinearly(t *testing.T) {
	const k = 1500
	ctx := context.Background()
	be := &countingReads{Backend: memory.New()}
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	next, err := backendtest.SeedLookbackBench(ctx, s, k, k, backendtest.TxRows(be))
	require.NoError(t, err)
	require.NotEqual(t, "", next)
	budget := int64(4*k + 100)

	be.rows.Store(0)
	_, err = s.Publish(ctx, "src", next)
	require.NoError(t, err)
	require.LessOrEqual(t, be.rows.Load(), budget, "rows read by one publish under a %d-hour lookback", k)
	c, err := s.FindNext(ctx, "look", "e")
	require.NoError(t, err)
	require.NotNil(t, c, "the publish completed the window of look-out/%s", next)
	require.Equal(t, next, c.DataID)
	require.Len(t, c.Reads, k+1)

	_, err = s.Publish(ctx, "tick", next)
	require.NoError(t, err)
	up, err := s.Claim(ctx, "up", next, "e")
	require.NoError(t, err)
	be.rows.Store(0)
	require.NoError(t, s.Complete(ctx, up.Token))
	require.LessOrEqual(t, be.rows.Load(), budget, "rows read by one completion under a %d-hour lookback", k)
	c, err = s.FindNext(ctx, "look2", "e")
	require.NoError(t, err)
	require.NotNil(t, c, "the completion of up completed the window of look2-out/%s", next)
	require.Equal(t, next, c.DataID)
}

// TestStoredWideJobBlocksNoPublish: a job stored before mappings this wide
// were refused (a window of 10,001 hours) neither stops its input's
// publishes nor fails the backfill a server resumes: each lists at most
// the outputs it queues.
func TestStoredWideJobBlocksNoPublish(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	s := engine.New(be, engine.WithClock(backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	hourly := partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00"}
	for _, id := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}", Partitions: &hourly})
		require.NoError(t, err)
	}
	wide := backends.Job{ID: "wide", Inputs: []string{"src"}, Output: "out", MaxAttempts: 3, LeaseSeconds: 60,
		InputMappings: []backends.InputMapping{{Dataset: "src", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -partition.MaxOffset}}}}
	_, err := s.ValidateJob(ctx, wide)
	require.Error(t, err, "refused today")
	_, _, version, err := be.VersionedCatalog(ctx)
	require.NoError(t, err)
	_, _, err = be.PutJob(ctx, wide, false, nil, version) // as an older version stored it
	require.NoError(t, err)
	_, _, err = be.SwapRecord(ctx, "backfill/wide", []byte("pending"), 0)
	require.NoError(t, err)

	for _, h := range []string{"2025-01-01T00", "2025-01-01T01"} {
		_, err := s.Publish(ctx, "src", h)
		require.NoError(t, err, "publish src/%s", h)
	}
	n, err := s.ResumeBackfills(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
