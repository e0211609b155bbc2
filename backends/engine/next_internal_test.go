package engine

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// TestDistinctCandidatesKeepsFrontier: of duplicates reserved in one round,
// the one kept stands for the schedule's frontier when a dropped one did,
// so that taking it moves the frontier on instead of losing it; the
// duplicates are returned by dataid, to be dropped when it is taken.
func TestDistinctCandidatesKeepsFrontier(t *testing.T) {
	plain := backends.Candidate{Job: "gen", DataID: "2026-01-01T01", Handle: 1}
	frontier := backends.Candidate{Job: "gen", DataID: "2026-01-01T01", Frontier: true, Handle: 2}
	other := backends.Candidate{Job: "gen", DataID: "2026-01-01T02", Handle: 3}
	got, twins := distinctCandidates([]backends.Candidate{plain, frontier, other})
	kept := plain
	kept.Frontier = true
	require.Equal(t, []backends.Candidate{kept, other}, got)
	require.Equal(t, map[string][]backends.Candidate{"2026-01-01T01": {frontier}}, twins)
}
