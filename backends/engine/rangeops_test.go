package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
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
