package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestDimensionsOverGraphQL: a date × region dataset declared through the
// API reads back with its dimensions (and no kind); a claim of one of its
// tuples carries each dimension's value, and its location names them; a
// job reading it through IDENTITY gets the same values for its input.
func TestDimensionsOverGraphQL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		def := map[string]any{"lagSeconds": 60, "dimensions": []map[string]any{
			{"name": "date", "kind": "DAILY", "start": "2026-02-27"},
			{"name": "region", "kind": "STATIC", "values": []string{"us", "eu"}},
		}}
		for _, id := range []string{"feeds", "mart"} {
			s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": id, "url": "s3://lake",
				"location": id + "/{region}/dt={date}/", "partitions": def}))
		}
		s.ok(admin, `mutation { upsertJob(input: {id: "ingest", output: "feeds"}) { job { id } } }`, nil)
		s.ok(admin, `mutation { upsertJob(input: {id: "build", output: "mart", inputs: ["feeds"]}) { job { id } } }`, nil)

		var ds struct {
			Partitions struct {
				Kind       *string
				LagSeconds int
				Dimensions []struct {
					Name, Kind string
					Start      *string
					Values     []string
				}
			}
		}
		s.ok(reader, `{ dataset(id: "feeds") { partitions { kind lagSeconds dimensions { name kind start values } } } }`, nil).field(t, "dataset", &ds)
		require.Nil(t, ds.Partitions.Kind, "a definition with dimensions has no kind")
		require.Equal(t, 60, ds.Partitions.LagSeconds)
		require.Len(t, ds.Partitions.Dimensions, 2)
		require.Equal(t, "date", ds.Partitions.Dimensions[0].Name)
		require.Equal(t, "DAILY", ds.Partitions.Dimensions[0].Kind)
		require.Equal(t, "2026-02-27", *ds.Partitions.Dimensions[0].Start)
		require.Equal(t, []string{"us", "eu"}, ds.Partitions.Dimensions[1].Values)

		type dimAccess struct {
			Dataid, Location string
			Dimensions       []struct{ Name, Value string }
		}
		var c struct {
			Token  string
			Dataid string
			Output dimAccess
			Inputs []dimAccess
		}
		next := `mutation($j: String!) { findNext(job: $j, executor: "e") { token dataid output { dataid location dimensions { name value } } inputs { dataid location dimensions { name value } } } }`
		s.ok(admin, next, vars("j", "ingest")).field(t, "findNext", &c)
		require.Equal(t, "2026-02-27|eu", c.Dataid, "the oldest date first, its regions in order")
		require.Equal(t, "feeds/eu/dt=2026-02-27/", c.Output.Location)
		require.Equal(t, []struct{ Name, Value string }{{"date", "2026-02-27"}, {"region", "eu"}}, c.Output.Dimensions)
		s.ok(admin, `mutation($t: String!) { complete(token: $t) }`, vars("t", c.Token))

		s.ok(admin, next, vars("j", "build")).field(t, "findNext", &c)
		require.Equal(t, "2026-02-27|eu", c.Dataid)
		require.Equal(t, "mart/eu/dt=2026-02-27/", c.Output.Location)
		require.Len(t, c.Inputs, 1)
		require.Equal(t, "feeds/eu/dt=2026-02-27/", c.Inputs[0].Location)
		require.Equal(t, c.Output.Dimensions, c.Inputs[0].Dimensions)

		// Slices: hold one region of a date range, list it.
		var r struct{ Changed int }
		s.ok(admin, `mutation { holdRange(dataset: "feeds", from: "2026-02-27", to: "2026-02-28", reason: "audit", slice: [{dimension: "region", values: ["us"]}]) { changed } }`, nil).
			field(t, "holdRange", &r)
		require.Equal(t, 2, r.Changed)
		var page struct {
			Edges []struct {
				Node struct{ Dataid, Status string }
			}
		}
		s.ok(reader, `{ partitions(dataset: "feeds", slice: [{dimension: "region", values: ["us"]}]) { edges { node { dataid status } } } }`, nil).
			field(t, "partitions", &page)
		require.Len(t, page.Edges, 1, "2026-02-28 is not due yet: partitions list the due tuples")
		require.Equal(t, "2026-02-27|us", page.Edges[0].Node.Dataid)
		require.Equal(t, "HOLD", page.Edges[0].Node.Status)
		require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, `{ partitions(dataset: "feeds", slice: [{dimension: "date", values: ["2026-02-27"]}]) { edges { cursor } } }`, nil))
		// A sliced partitionRuns without a limit fits the default cost.
		var runs struct {
			Count int
			Runs  []struct{ From, To, Status string }
		}
		s.ok(reader, `{ partitionRuns(dataset: "feeds", slice: [{dimension: "region", values: ["us"]}]) { count runs { from to status } } }`, nil).field(t, "partitionRuns", &runs)
		require.Equal(t, 1, runs.Count)
		require.Equal(t, "HOLD", runs.Runs[0].Status)

		// chunks takes a slice too: the rows of the region's tuples, in
		// pages (one row a page here), and refuses a slice without a
		// dataset or of a dimension the dataset lacks.
		var rows struct {
			Edges []struct {
				Node struct{ Dataid, Role string }
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
		chunksQ := `query($after: String) { chunks(dataset: "feeds", role: OUTPUT, first: 1, after: $after, slice: [{dimension: "region", values: ["us"]}]) { edges { node { dataid role } } pageInfo { hasNextPage endCursor } } }`
		var got []string
		var after any
		for range 5 {
			s.ok(reader, chunksQ, vars("after", after)).field(t, "chunks", &rows)
			for _, e := range rows.Edges {
				got = append(got, e.Node.Dataid)
			}
			if !rows.PageInfo.HasNextPage {
				break
			}
			after = *rows.PageInfo.EndCursor
		}
		require.Equal(t, []string{"2026-02-27|us", "2026-02-28|us"}, got, "the held tuples; no eu row")
		require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, `{ chunks(slice: [{dimension: "region", values: ["us"]}]) { edges { cursor } } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, `{ chunks(dataset: "feeds", slice: [{dimension: "customer", values: ["a"]}]) { edges { cursor } } }`, nil))

		// A location must locate a chunk: {dataid}, or every dimension.
		code := s.fails(admin, upsertDatasetQ, vars("in", map[string]any{"id": "bad", "location": "x/{region}/", "partitions": def}))
		require.Equal(t, "INVALID_ARGUMENT", code)
		// kind and dimensions together, or neither, are refused.
		both := map[string]any{"kind": "DAILY", "start": "2026-01-01", "dimensions": def["dimensions"]}
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, upsertDatasetQ, vars("in", map[string]any{"id": "bad", "partitions": both})))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, upsertDatasetQ, vars("in", map[string]any{"id": "bad", "partitions": map[string]any{"lagSeconds": 0}})))
	})
}
