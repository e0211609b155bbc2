package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestLifecycleOverGraphQL: pauseJob, resumeJob and the deletions answer
// over GraphQL with the store's codes (LOCKED with the live claim as a
// blocker, INVALID_ARGUMENT naming the chunks), and a paused job's runner
// gets no claim.
func TestLifecycleOverGraphQL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		s.publish("a", "1")
		s.publish("a", "2")

		var paused struct{ Paused bool }
		s.ok(admin, `mutation { pauseJob(id: "ja") { paused } }`, nil).field(t, "pauseJob", &paused)
		require.True(t, paused.Paused)
		var next *struct{ DataID string }
		s.ok(runnerA, `mutation { findNext(job: "ja", executor: "e") { dataid } }`, nil).field(t, "findNext", &next)
		require.Nil(t, next, "a paused job gets no claim")
		s.ok(admin, `mutation { resumeJob(id: "ja") { paused } }`, nil).field(t, "resumeJob", &paused)
		require.False(t, paused.Paused)
		s.ok(runnerA, `mutation { findNext(job: "ja", executor: "e") { dataid } }`, nil).field(t, "findNext", &next)
		require.NotNil(t, next)

		r := s.send(request{who: admin, query: `mutation { deleteJob(id: "ja") }`})
		require.Equal(t, "LOCKED", r.code(t))
		require.NotEmpty(t, r.Errors[0].Extensions["blockers"], "the live claim is named: %s", r.Body)
		require.Equal(t, "LOCKED", s.fails(admin, `mutation { deleteDataset(id: "b") }`, nil))
		require.Equal(t, "NOT_FOUND", s.fails(admin, `mutation { deletePool(id: "nope") }`, nil))

		s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "loose"}))
		s.publish("loose", "1")
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { deleteDataset(id: "loose") }`, nil))
		var done bool
		s.ok(admin, `mutation { deleteDataset(id: "loose", deleteChunks: true) }`, nil).field(t, "deleteDataset", &done)
		require.True(t, done)
	})
}
