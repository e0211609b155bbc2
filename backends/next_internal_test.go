package backends

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// dropTx records the candidates dropped through it.
type dropTx struct {
	Tx
	dropped []Candidate
}

func (t *dropTx) DropCandidate(_ context.Context, c Candidate) error {
	t.dropped = append(t.dropped, c)
	return nil
}

// TestDistinctCandidatesKeepsFrontier: of duplicates reserved in one round,
// the one kept stands for the schedule's frontier when a dropped one did,
// so that taking it moves the frontier on instead of losing it.
func TestDistinctCandidatesKeepsFrontier(t *testing.T) {
	tx := &dropTx{}
	plain := Candidate{Job: "gen", DataID: "2026-01-01T01", Handle: 1}
	frontier := Candidate{Job: "gen", DataID: "2026-01-01T01", Frontier: true, Handle: 2}
	other := Candidate{Job: "gen", DataID: "2026-01-01T02", Handle: 3}
	got, err := distinctCandidates(context.Background(), tx, []Candidate{plain, frontier, other})
	require.NoError(t, err)
	kept := plain
	kept.Frontier = true
	require.Equal(t, []Candidate{kept, other}, got)
	require.Equal(t, []Candidate{frontier}, tx.dropped)
}
