package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
)

// TestPartitionsQuery: partitions pages through expected dataids with
// opaque cursors, windows in RFC 3339 (null without one), NONE for missing
// chunks, the status and late filters, and clear errors; readers may list.
func TestPartitionsQuery(t *testing.T) {
	clock := backends.NewFakeClock(time.Date(2026, 1, 4, 12, 0, 0, 0, time.UTC))
	store := teststores.Memory(clock)
	ctx := t.Context()
	deadline := 6 * time.Hour
	for _, d := range []backends.Dataset{
		{ID: "feed", Location: "/feed/{dataid}", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: &deadline}},
		{ID: "regions", Location: "/r/{dataid}", Partitions: &partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}}},
		{ID: "plain", Location: "/plain/{dataid}"},
	} {
		_, err := store.UpsertDataset(ctx, d)
		require.NoError(t, err)
	}
	_, err := store.Publish(ctx, "feed", "2026-01-02")
	require.NoError(t, err)
	s := newStack(t, store)

	const q = `query($d: String!, $status: Status, $late: Boolean, $first: Int, $after: String, $to: String) {
		partitions(dataset: $d, status: $status, late: $late, first: $first, after: $after, to: $to) {
			edges { cursor node { dataset dataid status windowStart windowEnd dueAt late } }
			pageInfo { hasNextPage endCursor } } }`
	type node struct {
		Dataset, Dataid, Status string
		WindowStart, WindowEnd  *string
		DueAt                   *string
		Late                    bool
	}
	type conn struct {
		Edges []struct {
			Cursor string
			Node   node
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   string
		}
	}
	page := func(v map[string]any) conn {
		var c conn
		s.ok(reader, q, v).field(t, "partitions", &c)
		return c
	}
	c := page(vars("d", "feed", "first", 2))
	require.Len(t, c.Edges, 2)
	require.True(t, c.PageInfo.HasNextPage)
	require.Equal(t, c.Edges[1].Cursor, c.PageInfo.EndCursor)
	require.Equal(t, node{Dataset: "feed", Dataid: "2026-01-01", Status: "NONE", WindowStart: ptr("2026-01-01T00:00:00Z"),
		WindowEnd: ptr("2026-01-02T00:00:00Z"), DueAt: ptr("2026-01-02T00:00:00Z"), Late: true}, c.Edges[0].Node)
	require.Equal(t, "READY", c.Edges[1].Node.Status)
	require.False(t, c.Edges[1].Node.Late)
	c = page(vars("d", "feed", "first", 2, "after", c.PageInfo.EndCursor))
	require.Len(t, c.Edges, 1, "2026-01-03 is the last due day")
	require.Equal(t, "2026-01-03", c.Edges[0].Node.Dataid)
	require.True(t, c.Edges[0].Node.Late, "its deadline was 06:00 today")
	require.False(t, c.PageInfo.HasNextPage)

	c = page(vars("d", "feed", "status", "NONE"))
	require.Len(t, c.Edges, 2)
	c = page(vars("d", "feed", "late", false, "to", "2026-01-05"))
	require.Len(t, c.Edges, 3, "the READY day and the two not due yet")

	c = page(vars("d", "regions"))
	require.Len(t, c.Edges, 2)
	require.Nil(t, c.Edges[0].Node.WindowStart)
	require.Nil(t, c.Edges[0].Node.DueAt)

	require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, q, vars("d", "plain")))
	require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, q, vars("d", "feed", "status", "DONE")))
	require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, q, vars("d", "feed", "after", "not-a-cursor")))
	require.Equal(t, "NOT_FOUND", s.fails(reader, q, vars("d", "nope")))

	var ds []struct {
		ID      string
		Summary *struct{ Missing, Late int } `json:"partitionSummary"`
	}
	s.ok(reader, `{ datasets { id partitionSummary { missing late } } }`, nil).field(t, "datasets", &ds)
	require.Len(t, ds, 3)
	for _, d := range ds {
		switch d.ID {
		case "feed":
			require.Equal(t, &struct{ Missing, Late int }{2, 2}, d.Summary)
		case "regions":
			require.Equal(t, &struct{ Missing, Late int }{2, 0}, d.Summary)
		default:
			require.Nil(t, d.Summary, "no definition, no summary")
		}
	}
}
