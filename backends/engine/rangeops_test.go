package engine_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// TestRangeLimitExisting: a range over more than MaxRangeDataIDs existing
// chunks is refused before anything is written; one of exactly that many
// goes through.
func TestRangeLimitExisting(t *testing.T) {
	ctx := context.Background()
	s := engine.New(memory.New())
	defer s.Close()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	for i := 1; i <= backends.MaxRangeDataIDs+1; i++ {
		_, err := s.Publish(ctx, "src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	last := strconv.Itoa(backends.MaxRangeDataIDs + 1)
	_, err = s.HoldRange(ctx, "src", "1", last, "x")
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
	_, err = s.ResubmitRange(ctx, "src", "1", last, false)
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
	page, err := s.Chunks(ctx, backends.ChunkFilter{Dataset: "src", Status: backends.StatusHold})
	require.NoError(t, err)
	require.Empty(t, page.Rows, "a refused range writes nothing")

	res, err := s.HoldRange(ctx, "src", "2", last, "x")
	require.NoError(t, err)
	require.Equal(t, backends.MaxRangeDataIDs, res.Changed)
}

// TestRangeBatches: on a backend that batches, a range takes one
// transaction per MaxBatch chunks (refusals inside a batch: the suite's
// RangeOrder, run batched by TestBatchedConformance).
func TestRangeBatches(t *testing.T) {
	ctx := context.Background()
	be := &batching{versioned: &versioned{Backend: memory.New()}}
	s := engine.New(be)
	defer s.Close()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	for i := 1; i <= 20; i++ {
		_, err := s.Publish(ctx, "src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	_, err = s.Hold(ctx, "src", "5", "x")
	require.NoError(t, err)
	_, err = s.Resubmit(ctx, "src", "6", false)
	require.NoError(t, err)
	before := be.updates.Load()
	_, err = s.PublishRange(ctx, "src", "1", "20")
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "no definition: %v", err)
	res, err := s.ResubmitRange(ctx, "src", "1", "20", false)
	require.NoError(t, err)
	require.Equal(t, 19, res.Changed)
	require.Equal(t, 1, res.Unchanged, "6 was RESUBMIT already")
	require.Equal(t, int64(3), be.updates.Load()-before, "20 chunks, 8 per transaction")
}

// rangeBatching also serves up to 16 chunks of a range per transaction.
type rangeBatching struct{ *batching }

func (b rangeBatching) Limits() backends.Limits {
	l := b.batching.Limits()
	l.MaxRangeBatch = 16
	return l
}

// TestRangeBatcher: a backend whose Limits allow more chunks of a range
// per transaction (MaxRangeBatch) than other operations (MaxBatch) serves
// MaxRangeBatch chunks of a range per transaction.
func TestRangeBatcher(t *testing.T) {
	ctx := context.Background()
	be := rangeBatching{&batching{versioned: &versioned{Backend: memory.New()}}}
	s := engine.New(be)
	defer s.Close()
	_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	for i := 1; i <= 20; i++ {
		_, err := s.Publish(ctx, "src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	before := be.updates.Load()
	res, err := s.HoldRange(ctx, "src", "1", "20", "")
	require.NoError(t, err)
	require.Equal(t, 20, res.Changed)
	require.Equal(t, int64(2), be.updates.Load()-before, "20 chunks, 16 per transaction")
}

// updateHook runs hook once, at the n-th transaction of the backend.
type updateHook struct {
	*memory.Backend
	n     atomic.Int64
	at    int64
	hook  func()
	fired atomic.Bool
}

func (u *updateHook) Update(ctx context.Context, fn func(backends.Tx) error) error {
	if u.n.Add(1) == u.at {
		u.hook()
		u.fired.Store(true)
	}
	return u.Backend.Update(ctx, fn)
}

// TestRangeAcrossARedefinition: a range lists its dataids from the
// catalog of its start; a dataset deleted and made again with a later
// start before the range's batch runs gets no chunk at a dataid its new
// definition does not expect: those are skipped, INVALID_ARGUMENT.
func TestRangeAcrossARedefinition(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	other := engine.New(mem)
	defer other.Close()
	daily := func(start string) backends.Dataset {
		return backends.Dataset{ID: "src", Partitions: &partition.Def{Kind: partition.Daily, Start: start}}
	}
	_, err := other.UpsertDataset(ctx, daily("2026-01-01"))
	require.NoError(t, err)
	be := &updateHook{Backend: mem, at: 1, hook: func() {
		require.NoError(t, other.DeleteDataset(ctx, "src", true))
		_, err := other.UpsertDataset(ctx, daily("2026-01-06"))
		require.NoError(t, err)
	}}
	s := engine.New(be)
	defer s.Close()
	res, err := s.PublishRange(ctx, "src", "2026-01-01", "2026-01-10")
	require.NoError(t, err)
	require.True(t, be.fired.Load(), "%d transactions", be.n.Load())
	require.Equal(t, 5, res.Changed, "%+v", res)
	require.Len(t, res.Skipped, 5, "%+v", res)
	for _, sk := range res.Skipped {
		require.Equal(t, backends.CodeInvalidArgument, sk.Code, "%+v", sk)
		require.Contains(t, sk.Reason, "no longer an expected dataid")
	}
	page, err := s.Chunks(ctx, backends.ChunkFilter{Dataset: "src"})
	require.NoError(t, err)
	require.Len(t, page.Rows, 5)
	require.Equal(t, "2026-01-06", page.Rows[0].DataID)
}
