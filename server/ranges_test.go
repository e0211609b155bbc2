package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestRangeMutations: the range mutations answer what they changed and,
// for each skipped chunk, its code and reason; their errors carry codes.
func TestRangeMutations(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		for _, id := range []string{"1", "2", "3"} {
			s.publish("a", id)
		}
		s.ok(admin, forceQ, vars("job", "ja", "id", "2", "ex", "op"))
		type result struct {
			Changed, Unchanged int
			Skipped            []struct{ Dataid, Code, Reason string }
		}
		var r result
		q := `mutation($d: String!) { holdRange(dataset: $d, from: "1", to: "3", reason: "audit") { changed unchanged skipped { dataid code reason } } }`
		s.ok(admin, q, vars("d", "b")).field(t, "holdRange", &r)
		require.Equal(t, 0, r.Changed, "b has one chunk, 2, RUNNING")
		require.Equal(t, 0, r.Unchanged)
		require.Len(t, r.Skipped, 1)
		require.Equal(t, "2", r.Skipped[0].Dataid)
		require.Equal(t, "LOCKED", r.Skipped[0].Code)
		require.Contains(t, r.Skipped[0].Reason, "RUNNING")
		s.ok(admin, q, vars("d", "a")).field(t, "holdRange", &r)
		require.Equal(t, 3, r.Changed)
		require.Empty(t, r.Skipped)

		s.ok(admin, `mutation { resubmitRange(dataset: "a", from: "1", to: "3") { changed unchanged skipped { dataid code reason } } }`, nil).
			field(t, "resubmitRange", &r)
		require.Equal(t, 3, r.Changed)
		require.Empty(t, r.Skipped)

		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { holdRange(dataset: "a", from: "3", to: "1") { changed } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { publishRange(dataset: "a", from: "1", to: "3") { changed } }`, nil),
			"no partition definition")
		require.Equal(t, "NOT_FOUND", s.fails(admin, `mutation { resubmitRange(dataset: "zz", from: "1", to: "3") { changed } }`, nil))

		// A defined dataset: publishRange publishes its expected dataids.
		s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "days",
			"partitions": map[string]any{"kind": "DAILY", "start": "2026-01-01"}}))
		s.ok(admin, `mutation { publishRange(dataset: "days", from: "2025-12-30", to: "2026-01-31") { changed unchanged skipped { dataid code reason } } }`, nil).
			field(t, "publishRange", &r)
		require.Equal(t, 31, r.Changed)
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { publishRange(dataset: "days", from: "2026-01-01", to: "2053-05-19") { changed } }`, nil),
			"10,001 dataids")
		require.Equal(t, "FORBIDDEN", s.fails(reader, `mutation { publishRange(dataset: "a", from: "1", to: "3") { changed } }`, nil))
	})
}
