package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// partitionCount tells how many partitions of dataset the dataid id is
// (0 or 1), read as admin.
func (s *stack) partitionCount(dataset, id string) int {
	s.t.Helper()
	var page struct {
		Edges []struct{ Node struct{ Dataid string } }
	}
	s.ok(admin, `query($d: String!, $id: String!) { partitions(dataset: $d, from: $id, to: $id) { edges { node { dataid } } } }`,
		vars("d", dataset, "id", id)).field(s.t, "partitions", &page)
	return len(page.Edges)
}

// TestDynamicMutations: addPartitions and removePartitions answer a
// RangeResult with a code for each value skipped; a job without inputs on
// the dataset claims the values added; errors carry codes.
func TestDynamicMutations(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "files",
			"partitions": map[string]any{"kind": "DYNAMIC", "deadlineSeconds": 3600}}))
		s.ok(admin, `mutation { upsertJob(input: {id: "ingest", output: "files"}) { job { id } } }`, nil)
		type result struct {
			Changed, Unchanged int
			Skipped            []struct{ Dataid, Code, Reason string }
		}
		var r result
		add := `mutation($ids: [String!]!) { addPartitions(dataset: "files", dataids: $ids) { changed unchanged skipped { dataid code reason } } }`
		s.ok(admin, add, vars("ids", []string{"b.csv", "a.csv"})).field(t, "addPartitions", &r)
		require.Equal(t, 2, r.Changed)
		s.ok(admin, add, vars("ids", []string{"a.csv", "c.csv"})).field(t, "addPartitions", &r)
		require.Equal(t, 1, r.Changed)
		require.Len(t, r.Skipped, 1)
		require.Equal(t, "a.csv", r.Skipped[0].Dataid)
		require.Equal(t, "ALREADY_EXISTS", r.Skipped[0].Code)

		var c claimDoc
		s.ok(admin, `mutation { findNext(job: "ingest", executor: "e") { dataid } }`, nil).field(t, "findNext", &c)
		require.Equal(t, "a.csv", c.DataID)

		s.ok(admin, `mutation { removePartitions(dataset: "files", dataids: ["c.csv", "x"]) { changed unchanged skipped { dataid code reason } } }`, nil).
			field(t, "removePartitions", &r)
		require.Equal(t, 1, r.Changed)
		require.Equal(t, "NOT_FOUND", r.Skipped[0].Code)
		require.Equal(t, 0, s.partitionCount("files", "c.csv"))
		require.Equal(t, 1, s.partitionCount("files", "b.csv"))

		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { addPartitions(dataset: "files", dataids: ["a b"]) { changed } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { addPartitions(dataset: "files", dataids: ["a"], dimension: "region") { changed } }`, nil))
		require.Equal(t, "NOT_FOUND", s.fails(admin, `mutation { addPartitions(dataset: "nope", dataids: ["a"]) { changed } }`, nil))
		require.Equal(t, "FORBIDDEN", s.fails(reader, `mutation { addPartitions(dataset: "files", dataids: ["z"]) { changed } }`, nil))
		many := make([]string, backends.MaxPartitionValues+1)
		for i := range many {
			many[i] = "f" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		}
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, add, vars("ids", many)), "more than 10,000 values")

		var changes struct {
			Edges []struct{ Node struct{ Op string } }
		}
		s.ok(admin, `{ catalogChanges(dataset: "files", first: 2) { edges { node { op } } } }`, nil).field(t, "catalogChanges", &changes)
		require.Equal(t, "removePartitions", changes.Edges[0].Node.Op)
		require.Equal(t, "addPartitions", changes.Edges[1].Node.Op)
	})
}

// TestDynamicValuesAcrossReplicas: values added through one replica are
// seen at once by another sharing the store (its catalog cache holds the
// definition, never the values): its partitions list them and its
// findNext claims them, each once across both.
func TestDynamicValuesAcrossReplicas(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		ctx := t.Context()
		stores := kind.Open(t, backends.NewFakeClock(t0), 2)
		a, b := stores[0], stores[1]
		def := partition.Def{Kind: partition.Dynamic}
		_, err := a.UpsertDataset(ctx, backends.Dataset{ID: "files", Location: "/f/{dataid}", Partitions: &def})
		require.NoError(t, err)
		_, err = a.UpsertJob(ctx, backends.Job{ID: "ingest", Output: "files"})
		require.NoError(t, err)
		// b loads its catalog before the values exist.
		c, err := b.FindNext(ctx, "ingest", "e")
		require.NoError(t, err)
		require.Nil(t, c)
		_, err = a.AddPartitions(ctx, "files", []string{"x", "y"}, "", "")
		require.NoError(t, err)
		page, err := b.Partitions(ctx, backends.PartitionFilter{Dataset: "files"})
		require.NoError(t, err)
		require.Len(t, page.Partitions, 2)
		var got []string
		for _, s := range []backends.Store{b, a, b} {
			c, err := s.FindNext(ctx, "ingest", "e")
			require.NoError(t, err)
			if c != nil {
				got = append(got, c.DataID)
			}
		}
		require.Equal(t, []string{"x", "y"}, got)
		_, err = b.RemovePartitions(ctx, "files", []string{"x"}, "")
		require.NoError(t, err)
		page, err = a.Partitions(ctx, backends.PartitionFilter{Dataset: "files"})
		require.NoError(t, err)
		require.Len(t, page.Partitions, 1)
	})
}
