package engine

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// addsTx records the candidates added through it.
type addsTx struct {
	backends.Tx
	added []backends.Candidate
}

func (t *addsTx) AddCandidate(_ context.Context, c backends.Candidate) error {
	t.added = append(t.added, c)
	return nil
}

// TestRangeBatchAddsOneSweepPerJob: the chunks of one range transaction
// that each start a sweep of a job add only the lowest, which walks the
// outputs of the others; plain candidates and other jobs' sweeps pass.
func TestRangeBatchAddsOneSweepPerJob(t *testing.T) {
	ctx := context.Background()
	tx := &addsTx{}
	base := &batchReads{Tx: tx}
	for _, c := range []backends.Candidate{
		{Job: "a", DataID: "2025-01-02", Frontier: true},
		{Job: "a", DataID: "2025-01-03", Frontier: true},
		{Job: "a", DataID: "2025-01-03"},
		{Job: "b", DataID: "2025-01-03", Frontier: true},
		{Job: "a", DataID: "2025-01-01", Frontier: true},
		{Job: "a", DataID: "2025-01-04", Frontier: true},
	} {
		ct := newChunkTx(base)
		require.NoError(t, ct.AddCandidate(ctx, c))
		require.NoError(t, ct.commit(ctx))
	}
	require.Equal(t, []backends.Candidate{
		{Job: "a", DataID: "2025-01-02", Frontier: true},
		{Job: "a", DataID: "2025-01-03"},
		{Job: "b", DataID: "2025-01-03", Frontier: true},
		{Job: "a", DataID: "2025-01-01", Frontier: true},
	}, tx.added)
}
