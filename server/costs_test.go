package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/server"
)

// costStore is a memory store with a daily source "feed" (2026-01-01 on,
// a deadline of six hours, the clock at 2026-01-05 12:00: four days due,
// 01-02 READY) and a 10,000-value STATIC "regions".
func costStore(t *testing.T) backends.Store {
	clock := backends.NewFakeClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	store := teststores.Memory(clock)
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	deadline := 6 * time.Hour
	values := make([]string, partition.MaxStaticValues)
	for i := range values {
		values[i] = fmt.Sprintf("r%05d", i)
	}
	for _, d := range []backends.Dataset{
		{ID: "feed", Location: "/feed/{dataid}", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: &deadline}},
		{ID: "regions", Location: "/r/{dataid}", Partitions: &partition.Def{Kind: partition.Static, Values: values}},
	} {
		_, err := store.UpsertDataset(ctx, d)
		require.NoError(t, err)
	}
	_, err := store.Publish(ctx, "feed", "2026-01-02")
	require.NoError(t, err)
	// orders: date × customer (DYNAMIC, 150 customers), none published.
	dims := partition.Def{Kind: partition.Dimensional, Deadline: &deadline, Dimensions: []partition.Dimension{
		{Name: "date", Def: partition.Def{Kind: partition.Daily, Start: "2026-01-01"}},
		{Name: "customer", Def: partition.Def{Kind: partition.Dynamic}},
	}}
	_, err = store.UpsertDataset(ctx, backends.Dataset{ID: "orders", Location: "/o/{dataid}", Partitions: &dims})
	require.NoError(t, err)
	customers := make([]string, 150)
	for i := range customers {
		customers[i] = fmt.Sprintf("c%03d", i)
	}
	_, err = store.AddPartitions(ctx, "orders", customers, "customer", "2026-01-01")
	require.NoError(t, err)
	return store
}

// TestCostlyFieldsBounded: the partition, summary and range fields cost
// what bounds their work, so a request cannot multiply it under aliases:
// the reported shapes (100 aliased summaries, aliased filtered partition
// pages, aliased ranges) are refused with INVALID_ARGUMENT naming
// --max-complexity before anything runs, while what clients send (one
// filtered page, the dashboard's ten unfiltered pages, one range, every
// dataset's summary, fifty datasets' chunk counts) passes.
func TestCostlyFieldsBounded(t *testing.T) {
	s := newStack(t, costStore(t))
	summary := `dataset(id: "feed") { partitionSummary { missing } }`
	filtered := `partitions(dataset: "feed", status: NONE) { pageInfo { endCursor } }`
	unfiltered := `partitions(dataset: "feed", first: 1000) { edges { node { dataid status late } } pageInfo { hasNextPage endCursor } }`
	hold := `holdRange(dataset: "feed", from: "2026-01-01", to: "2026-01-04") { changed }`
	counts := `dataset(id: "feed") { chunkCounts { total ready } }`
	for _, c := range []struct {
		name, who, query string
	}{
		{"100 aliased summaries", reader, aliases("", 100, same(summary))},
		{"10 aliased pages of 100 value summaries", reader, aliases("", 10, same(`dataset(id: "orders") { valueSummaries(dimension: "customer", first: 100) { summaries { value missing late oldestMissing oldestLate } } }`))},
		{"100 aliased summaries of every dataset", reader, aliases("", 100, same(`datasets { partitionSummary { missing } }`))},
		{"100 aliased filtered partitions", reader, aliases("", 100, same(filtered))},
		{"2 aliased filtered partitions", reader, aliases("", 2, same(filtered))},
		{"10 aliased pages of 1,000 partitions", reader, aliases("", 10, same(unfiltered))},
		{"2 aliased ranges", admin, aliases("mutation", 2, same(hold))},
		{"100 aliased chunk counts", reader, aliases("", 100, same(counts))},
	} {
		r := s.send(request{who: c.who, query: c.query, timeout: hangGuard})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, "INVALID_ARGUMENT", r.code(t), c.name)
		require.Contains(t, r.Errors[0].Message, "--max-complexity", c.name)
		require.Nil(t, r.Data, c.name)
	}
	var held struct{ Changed int }
	for _, q := range []string{
		`{ ` + filtered + ` }`,
		aliases("", 5, same(unfiltered)),
		aliases("", 10, same(summary)),
		`{ datasets { id partitionSummary { at missing late oldestMissing oldestLate truncated } } }`,
		aliases("", 50, same(counts)),
	} {
		s.ok(reader, q, nil)
	}
	var counted struct{ ChunkCounts struct{ Total, Ready int } }
	s.ok(reader, `{ `+counts+` }`, nil).field(t, "dataset", &counted)
	require.Equal(t, 1, counted.ChunkCounts.Total)
	require.Equal(t, 1, counted.ChunkCounts.Ready)
	s.ok(admin, `mutation { `+hold+` }`, nil).field(t, "holdRange", &held)
	require.Equal(t, 4, held.Changed)
}

// countingStore counts the partition counts made, how many ran at once at
// most, and when each began and ended.
type countingStore struct {
	backends.Store
	counts, running, most atomic.Int64
	mu                    sync.Mutex
	spans                 [][2]time.Time
}

func (c *countingStore) PartitionCounts(ctx context.Context, dataset string) (backends.PartitionCount, error) {
	c.counts.Add(1)
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	begin := time.Now()
	time.Sleep(20 * time.Millisecond) // long enough for concurrent counts to overlap
	count, err := c.Store.PartitionCounts(ctx, dataset)
	c.mu.Lock()
	c.spans = append(c.spans, [2]time.Time{begin, time.Now()})
	c.mu.Unlock()
	return count, err
}

// TestSummariesShared: a dataset's partition summary is counted once for
// every alias, field and request asking for it, until a mutation goes
// through the server or --summary-max-age passes; counts run one at a time
// however many requests ask at once, each followed by a rest as long as
// it took.
func TestSummariesShared(t *testing.T) {
	store := &countingStore{Store: costStore(t)}
	s := newStack(t, store, withConfig(func(c *server.Config) { c.SummaryMaxAge = time.Hour }))
	q := aliases("", 10, same(`dataset(id: "feed") { partitionSummary { missing oldestMissing } }`)) // + every dataset's below
	q = strings.TrimSuffix(q, "}") + ` all: datasets { id partitionSummary { missing } } }`
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { s.ok(reader, q, nil) })
	}
	wg.Wait()
	require.EqualValues(t, 3, store.counts.Load(), "feed, regions and orders counted once each, for 8 requests of 11 summaries")
	require.EqualValues(t, 1, store.most.Load(), "one count at a time")
	first, second := store.spans[0], store.spans[1]
	require.GreaterOrEqual(t, second[0].Sub(first[1]), first[1].Sub(first[0]), "a rest as long as the count before the next")
	var a struct{ PartitionSummary struct{ Missing int } }
	s.ok(reader, q, nil).field(t, "a3", &a)
	require.Equal(t, 3, a.PartitionSummary.Missing)
	require.EqualValues(t, 3, store.counts.Load(), "still shared")

	// A mutation through the server ends the sharing at once.
	s.ok(admin, `mutation { publish(dataset: "feed", dataid: "2026-01-03") { status } }`, nil)
	s.ok(reader, q, nil).field(t, "a3", &a)
	require.Equal(t, 2, a.PartitionSummary.Missing)
	require.EqualValues(t, 6, store.counts.Load(), "every dataset counted again, once")

	// A change through another server shows once --summary-max-age has
	// passed.
	_, err := store.Publish(t.Context(), "feed", "2026-01-04")
	require.NoError(t, err)
	s.ok(reader, q, nil).field(t, "a3", &a)
	require.Equal(t, 2, a.PartitionSummary.Missing, "within --summary-max-age")
	young := newStack(t, store, withConfig(func(c *server.Config) { c.SummaryMaxAge = time.Nanosecond }))
	young.ok(reader, q, nil).field(t, "a3", &a)
	require.Equal(t, 1, a.PartitionSummary.Missing)
}

// rangeFailing fails every range operation on dataset "bad" half way, as
// a store that stops answering does.
type rangeFailing struct{ backends.Store }

func (r rangeFailing) HoldRange(ctx context.Context, dataset, from, to, reason string) (backends.RangeResult, error) {
	if dataset != "bad" {
		return r.Store.HoldRange(ctx, dataset, from, to, reason)
	}
	res := backends.RangeResult{Changed: 2, Unchanged: 1, Skipped: []backends.RangeSkip{{DataID: "2026-01-02", Code: backends.CodeLocked}}}
	return res, &backends.Error{Code: backends.CodeUnavailable, Message: "holdRange stopped after 4 of 10 chunks",
		Range: &backends.RangeProgress{RangeResult: res, Done: 4, Total: 10, LastDataID: "2026-01-04"}}
}

// TestRangeFailureKeepsOtherAliases: a range operation failing half way
// answers null with an error whose extensions say how far it got, and the
// other fields of the request (one range fits in a request, beside other
// mutations) keep their answers.
func TestRangeFailureKeepsOtherAliases(t *testing.T) {
	store := rangeFailing{costStore(t)}
	s := newStack(t, store)
	r := s.send(request{who: admin, query: `mutation {
		held: hold(dataset: "feed", dataid: "2026-01-01") { status }
		bad: holdRange(dataset: "bad", from: "2026-01-01", to: "2026-01-10") { changed }
		pub: publish(dataset: "feed", dataid: "2026-01-05") { status } }`})
	require.Len(t, r.Errors, 1, r.Body)
	require.JSONEq(t, `{"status": "HOLD"}`, string(r.Data["held"]), r.Body)
	require.JSONEq(t, `{"status": "READY"}`, string(r.Data["pub"]))
	require.JSONEq(t, `null`, string(r.Data["bad"]))
	e := r.Errors[0]
	require.Equal(t, []any{"bad"}, e.Path)
	require.Equal(t, map[string]any{"code": "UNAVAILABLE", "done": 4.0, "total": 10.0, "lastDataid": "2026-01-04",
		"changed": 2.0, "unchanged": 1.0, "skipped": 1.0}, e.Extensions)
	require.Contains(t, e.Message, "stopped after 4 of 10 chunks")
}

// TestClientQueriesWithinCosts: what chunklock's client and the dashboard
// send about partitions, summaries, ranges and chunks stays within the
// default --max-complexity.
func TestClientQueriesWithinCosts(t *testing.T) {
	s := newStack(t, costStore(t))
	ctx := t.Context()
	c, err := client.New(s.url, client.WithToken(s.tokens[admin]))
	require.NoError(t, err)
	sums, err := c.PartitionSummaries(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, sums["feed"].Missing)
	missing, err := c.Partitions(ctx, client.PartitionFilter{Dataset: "feed", Status: "NONE"})
	require.NoError(t, err)
	require.Len(t, missing, 3)
	all, err := c.Partitions(ctx, client.PartitionFilter{Dataset: "regions"})
	require.NoError(t, err)
	require.Len(t, all, partition.MaxStaticValues)
	def, err := c.DatasetPartitions(ctx, "regions")
	require.NoError(t, err)
	require.Len(t, def.Values, partition.MaxStaticValues)
	_, err = c.LockGraph(ctx, "", "feed", "2026-01-02")
	require.NoError(t, err)
	res, err := c.HoldRange(ctx, "regions", "r00000", "r09999", "x")
	require.NoError(t, err)
	require.Equal(t, partition.MaxStaticValues, res.Changed)
	// `chunklock status --by customer`: pages of 100 values.
	vs, err := c.ValueSummaries(ctx, "orders", "customer", false, 100, "")
	require.NoError(t, err)
	require.Len(t, vs.Summaries, 100)
	require.True(t, vs.HasNextPage)
	require.Equal(t, 4, vs.Summaries[0].Missing, "2026-01-01 to 2026-01-04 are due")
	vs, err = c.ValueSummaries(ctx, "orders", "customer", true, 100, vs.Summaries[99].Value)
	require.NoError(t, err)
	require.Len(t, vs.Summaries, 50)
	require.Equal(t, 150, *vs.Behind)

	// The dashboard: the overview, the grid (ten datasets a request, as
	// ui/web/src/views/rows.ts asks), the summaries, a chunk's page and a
	// range.
	grid := `d%d: partitionRuns(dataset: "feed", from: $from, to: $to, limit: 745) {
		count next changesAt runs { from to count status late } }`
	var batch strings.Builder
	for i := range 10 {
		fmt.Fprintf(&batch, grid+"\n", i)
	}
	for _, q := range []string{
		`{ viewer { name role } datasets { id description partitions { kind deadlineSeconds } producer { id } }
			jobs { id inputs output paused maxAttempts } claims { token job dataid attempt executor fence leaseExpiresAt } }`,
		`query($from: String, $to: String) { ` + batch.String() + ` }`,
		`{ datasets { id partitionSummary { missing late truncated } } }`,
		`query($ds: String!, $id: String!, $job: String!, $hasJob: Boolean!) {
			chunk(dataset: $ds, dataid: $id) { status location
				rows { job role status attempt executor fence token leaseExpiresAt updatedAt reason locks }
				locks { dataset dataid kind job status } }
			blockers(job: $job, dataid: $id) @include(if: $hasJob) { dataset dataid job kind status until }
			lockGraph(dataset: $ds, dataid: $id) { nodes { id kind job dataset dataid status } edges { from to kind locks status } }
			events(dataset: $ds, dataid: $id, first: 1000) { edges { node { time actor job role from to attempt executor reason } } pageInfo { hasNextPage endCursor } } }`,
	} {
		s.ok(reader, q, vars("from", "2026-01-01", "to", "2026-01-04", "ds", "feed", "id", "2026-01-02", "job", "", "hasJob", false))
	}
	s.ok(admin, `mutation($d: String!, $from: String!, $to: String!, $cascade: Boolean) {
		r: resubmitRange(dataset: $d, from: $from, to: $to, cascade: $cascade) { changed unchanged skipped { dataid code reason } } }`,
		vars("d", "feed", "from", "2026-01-01", "to", "2026-01-04", "cascade", true))
}
