package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
)

type runsAnswer struct {
	Dataset   string
	Kind      *string
	From, To  *string
	Count     int
	Next      *string
	ChangesAt *string
	Runs      []struct {
		From, To string
		Count    int
		Status   string
		Late     bool
	}
	Columns []struct {
		From, To                                                              string
		Columns, Count, Ready, Running, Failed, Resubmit, Hold, Missing, Late int
	}
}

// TestPartitionRunsQuery: partitionRuns answers runs with NONE for missing
// dataids and late ones marked, columns at a coarser zoom, null for what a
// dataset without a definition lacks, and only the runs when runs are
// asked for (so their bound does not end a span asked by column); readers
// may read it, and latestReady.
func TestPartitionRunsQuery(t *testing.T) {
	clock := backends.NewFakeClock(time.Date(2026, 1, 3, 5, 0, 0, 0, time.UTC))
	store := teststores.Memory(clock)
	ctx := t.Context()
	deadline := time.Hour
	for _, d := range []backends.Dataset{
		{ID: "feed", Location: "/feed/{dataid}", Partitions: &partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", Deadline: &deadline}},
		{ID: "plain", Location: "/plain/{dataid}"},
	} {
		_, err := store.UpsertDataset(ctx, d)
		require.NoError(t, err)
	}
	_, err := store.PublishRange(ctx, "feed", "2026-01-01T00", "2026-01-02T11")
	require.NoError(t, err)
	_, err = store.Publish(ctx, "plain", "x1")
	require.NoError(t, err)
	s := newStack(t, store)

	const q = `query($d: String!, $zoom: PartitionKind, $limit: Int, $from: String) {
		partitionRuns(dataset: $d, zoom: $zoom, limit: $limit, from: $from) {
			dataset kind from to count next changesAt
			runs { from to count status late }
			columns { from to columns count ready running failed resubmit hold missing late } } }`
	var a runsAnswer
	s.ok(reader, q, vars("d", "feed", "zoom", "DAILY")).field(t, "partitionRuns", &a)
	require.Equal(t, "HOURLY", *a.Kind)
	require.Equal(t, "2026-01-01T00", *a.From)
	require.Equal(t, "2026-01-03T04", *a.To, "the last due hour at 05:00")
	require.Equal(t, 53, a.Count)
	require.Nil(t, a.Next)
	require.Equal(t, "2026-01-03T06:00:00Z", *a.ChangesAt, "T05 becomes due at 06:00, and T04 late")
	require.Len(t, a.Runs, 3)
	require.Equal(t, "READY", a.Runs[0].Status)
	require.Equal(t, 36, a.Runs[0].Count)
	require.Equal(t, "NONE", a.Runs[1].Status, "missing")
	require.Equal(t, "2026-01-02T12", a.Runs[1].From)
	require.True(t, a.Runs[1].Late)
	require.Equal(t, "2026-01-03T04", a.Runs[2].From)
	require.False(t, a.Runs[2].Late, "missing, not late yet")
	require.Len(t, a.Columns, 3)
	require.Equal(t, 24, a.Columns[0].Ready)
	require.Equal(t, 12, a.Columns[1].Missing)
	require.Equal(t, 12, a.Columns[1].Late, "past 12:00 + 1 hour")
	require.Equal(t, 5, a.Columns[2].Count)
	require.Equal(t, 4, a.Columns[2].Late)

	// Without runs selected, the span is not bound by the runs.
	var cols struct {
		Count   int
		Columns []struct{ From string }
	}
	s.ok(reader, `{ partitionRuns(dataset: "feed", zoom: MONTHLY) { count columns { from } } }`, nil).field(t, "partitionRuns", &cols)
	require.Equal(t, 53, cols.Count)

	a = runsAnswer{}
	s.ok(reader, q, vars("d", "plain")).field(t, "partitionRuns", &a)
	require.Nil(t, a.Kind, "no definition")
	require.Nil(t, a.ChangesAt)
	require.Empty(t, a.Columns)
	require.Equal(t, 1, a.Count)

	a = runsAnswer{}
	s.ok(reader, q, vars("d", "feed", "limit", 10, "from", "2026-01-01T05")).field(t, "partitionRuns", &a)
	require.Equal(t, "2026-01-01T15", *a.Next)

	var ds []struct {
		ID          string
		LatestReady *string
	}
	s.ok(reader, `{ datasets { id latestReady } }`, nil).field(t, "datasets", &ds)
	require.Equal(t, "feed", ds[0].ID)
	require.Equal(t, "2026-01-02T11", *ds[0].LatestReady)
	require.Equal(t, "x1", *ds[1].LatestReady)

	require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, q, vars("d", "feed", "zoom", "STATIC")))
	require.Equal(t, "NOT_FOUND", s.fails(reader, q, vars("d", "nope")))
}

// TestPartitionRunsCost: partitionRuns costs by the dataids it may look
// at, so that one request of the default limits reads about 20,000 of
// them: a request asking for more is refused before it runs, and says
// what to do.
func TestPartitionRunsCost(t *testing.T) {
	store := teststores.Memory(backends.NewFakeClock(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)))
	_, err := store.UpsertDataset(t.Context(), backends.Dataset{ID: "d", Location: "/d/{dataid}",
		Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}})
	require.NoError(t, err)
	s := newStack(t, store)
	s.ok(reader, `{ partitionRuns(dataset: "d", limit: 19000) { count runs { from } } }`, nil)
	s.ok(reader, `{ a: partitionRuns(dataset: "d", limit: 9000) { count } b: partitionRuns(dataset: "d", limit: 9000) { count } }`, nil)
	r := s.send(request{who: reader, query: `{ partitionRuns(dataset: "d", limit: 21000) { count } }`})
	require.Equal(t, "INVALID_ARGUMENT", r.code(t))
	require.Contains(t, r.Errors[0].Message, "complexity")
	r = s.send(request{who: reader, query: `{ a: partitionRuns(dataset: "d", limit: 10000) { count } b: partitionRuns(dataset: "d", limit: 10000) { count } }`})
	require.Equal(t, "INVALID_ARGUMENT", r.code(t), "two fields of 10,000 are over the limit")
	r = s.send(request{who: reader, query: `{ a: partitionRuns(dataset: "d") { count } b: partitionRuns(dataset: "d") { count } c: partitionRuns(dataset: "d") { count } }`})
	require.Equal(t, "INVALID_ARGUMENT", r.code(t), "the default limit counts too")
}
