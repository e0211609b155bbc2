package backendtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Multi-dimensional partitions (SPEC §10 "Dimensions", "Dataids and
// order"): a dataset's expected dataids are the cross product of its
// dimensions' values, joined by '|', ordered as tuples on every store. The
// expected lists below are written out by hand, not computed with the
// partition package.

var dimensionTests = []testCase{
	{"DimensionsTupleOrder", (*suite).testDimensionsTupleOrder},
	{"DimensionsRootAndIdentity", (*suite).testDimensionsRootAndIdentity},
	{"DimensionsPartitions", (*suite).testDimensionsPartitions},
	{"DimensionsRefused", (*suite).testDimensionsRefused},
	{"DimensionsAcrossRefused", (*suite).testDimensionsAcrossRefused},
	{"DimensionsAcrossByProduct", (*suite).testDimensionsAcrossByProduct},
	{"DimensionsCountsKept", (*suite).testDimensionsCountsKept},
	{"DimensionsSlices", (*suite).testDimensionsSlices},
	{"DimensionsRollUp", (*suite).testDimensionsRollUp},
	{"DimensionsRace", (*suite).testDimensionsRace},
	{"DimensionsFanOut", (*suite).testDimensionsFanOut},
}

func dimensionsDef(lag time.Duration, deadline *time.Duration, dims ...partition.Dimension) partition.Def {
	return partition.Def{Kind: partition.Dimensional, Dimensions: dims, Lag: lag, Deadline: deadline}
}

func dimension(name string, d partition.Def) partition.Dimension {
	return partition.Dimension{Name: name, Def: d}
}

// date × region × product, three days from 2026-01-01.
func threeDims() partition.Def {
	return dimensionsDef(0, nil,
		dimension("date", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-03"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "emea", "eu"}}),
		dimension("product", partition.Def{Kind: partition.Integer, Start: "9", End: "10"}))
}

// testDimensionsTupleOrder: chunks of a three-dimensional source, published
// in random order, list in tuple order (value by value, each shortlex:
// "eu" before "emea", "9" before "10"), page by page, on every store.
func (s *suite) testDimensionsTupleOrder(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("sales", threeDims())
	want := []string{
		"2026-01-01|eu|9", "2026-01-01|eu|10", "2026-01-01|us|9", "2026-01-01|us|10", "2026-01-01|emea|9", "2026-01-01|emea|10",
		"2026-01-02|eu|9", "2026-01-02|eu|10", "2026-01-02|us|9", "2026-01-02|us|10", "2026-01-02|emea|9", "2026-01-02|emea|10",
		"2026-01-03|eu|9", "2026-01-03|eu|10", "2026-01-03|us|9", "2026-01-03|us|10", "2026-01-03|emea|9", "2026-01-03|emea|10",
	}
	shuffled := slices.Clone(want)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b.publish("sales", shuffled...)
	b.clock.Advance(3 * 24 * time.Hour) // every date is due: partitions list due dataids

	var got []string
	f := backends.ChunkFilter{Dataset: "sales", First: 5}
	for {
		page, err := b.s.Chunks(b.ctx, f)
		require.NoError(t, err)
		for _, r := range page.Rows {
			got = append(got, r.DataID)
		}
		if !page.HasNextPage {
			break
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
	require.Equal(t, want, got, "chunks list in tuple order")

	page, err := b.s.Chunks(b.ctx, backends.ChunkFilter{Dataset: "sales", From: "2026-01-02|us|10", To: "2026-01-03|eu|9"})
	require.NoError(t, err)
	got = nil
	for _, r := range page.Rows {
		got = append(got, r.DataID)
	}
	require.Equal(t, want[9:13], got, "a range of tuples")
	page, err = b.s.Chunks(b.ctx, backends.ChunkFilter{Dataset: "sales", From: "2026-01-02", To: "2026-01-02"})
	require.NoError(t, err)
	got = nil
	for _, r := range page.Rows {
		got = append(got, r.DataID)
	}
	require.Equal(t, want[6:12], got, "first values as bounds cover every tuple they begin")

	require.Equal(t, want, b.partitionIDs(backends.PartitionFilter{Dataset: "sales", First: 4}), "partitions page in tuple order")
	require.Equal(t, want[6:12], b.partitionIDs(backends.PartitionFilter{Dataset: "sales", From: "2026-01-02", To: "2026-01-02"}),
		"from and to of the first dimension cover every tuple they begin")
	require.Equal(t, want[7:13], b.partitionIDs(backends.PartitionFilter{Dataset: "sales", From: "2026-01-02|eu|10", To: "2026-01-03|eu|9"}))
	for _, p := range b.partitions(backends.PartitionFilter{Dataset: "sales"}) {
		require.Equal(t, backends.StatusReady, p.Status, p.DataID)
	}
	res, err := b.s.HoldRange(b.ctx, "sales", "2026-01-03|us|10", "2026-01-03", "audit")
	require.NoError(t, err, "from a tuple to its own first value is not reversed")
	require.Equal(t, 3, res.Changed, "us|10, emea|9 and emea|10 of 2026-01-03")
}

// testDimensionsRootAndIdentity: a job without inputs producing a
// date × region dataset claims each due tuple once, oldest date first and
// within a date each region in order; a job reading it into a dataset of
// the same dimensions reads each tuple through IDENTITY, waits for it, and
// a resubmit of one tuple cascades to that tuple only.
func (s *suite) testDimensionsRootAndIdentity(t *testing.T) {
	b := s.setup(t)
	regions := partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}
	def := dimensionsDef(time.Hour, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("region", regions))
	b.definedDataset("feeds", def)
	b.definedDataset("mart", def)
	b.job("ingest", "feeds")
	b.job("build", "mart", "feeds")

	// At 2026-01-01 00:00 with an hour's lag only 2025-12-30 is due.
	require.Equal(t, []string{"2025-12-30|eu", "2025-12-30|us"}, b.drain("ingest"))
	b.clock.Advance(time.Hour)
	_, d := b.next("build")
	require.Equal(t, "2025-12-30|eu", d)
	c, d := b.next("ingest")
	require.Equal(t, "2025-12-31|eu", d)
	b.complete(c)
	c2, d := b.next("build")
	require.Equal(t, "2025-12-30|us", d)
	b.complete(c2)
	c3, d := b.next("build")
	require.Equal(t, "2025-12-31|eu", d, "each output tuple waits for its own input tuple only")
	b.complete(c3)
	_, d = b.next("build")
	require.Empty(t, d, "2025-12-31|us is not READY in feeds yet")
	require.Equal(t, []string{"2025-12-31|us"}, b.drain("ingest"))
	require.Equal(t, []string{"2025-12-31|us"}, b.drain("build"))
	require.Equal(t, backends.StatusRunning, b.status("mart", "2025-12-30|eu"), "the first claim is still live")

	// A resubmit of one tuple cascades to the chunk computed from it.
	_, err := b.s.Resubmit(b.ctx, "feeds", "2025-12-31|eu", true)
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, b.status("mart", "2025-12-31|eu"))
	require.Equal(t, backends.StatusReady, b.status("mart", "2025-12-31|us"), "another region is not reached")
	require.Equal(t, []string{"2025-12-31|eu"}, b.drain("ingest"))
	require.Equal(t, []string{"2025-12-31|eu"}, b.drain("build"))

	// A tuple the definition does not expect is refused by claim.
	_, err = b.s.Claim(b.ctx, "ingest", "2025-12-31|fr", executor)
	requireCode(t, err, backends.CodeInvalidArgument, "a region not declared")
	_, err = b.s.Claim(b.ctx, "ingest", "2025-12-31", executor)
	requireCode(t, err, backends.CodeInvalidArgument, "a dataid without a region")
}

// testDimensionsPartitions: the partitions of a date × region dataset
// carry their date's window; missing and late are counted per tuple.
func (s *suite) testDimensionsPartitions(t *testing.T) {
	b := s.setup(t)
	deadline := 2 * time.Hour
	def := dimensionsDef(0, &deadline, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30", Timezone: "Europe/Paris"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}))
	b.definedDataset("feeds", def)
	b.clock.Advance(3 * time.Hour) // 2026-01-01 04:00 Paris: 2025-12-31 Paris is late
	b.publish("feeds", "2025-12-30|us", "2025-12-31|eu")

	parts := b.partitions(backends.PartitionFilter{Dataset: "feeds"})
	var ids []string
	for _, p := range parts {
		ids = append(ids, p.DataID)
	}
	require.Equal(t, []string{"2025-12-30|eu", "2025-12-30|us", "2025-12-31|eu", "2025-12-31|us"}, ids)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	require.Equal(t, time.Date(2025, 12, 31, 0, 0, 0, 0, paris).Unix(), parts[3].WindowStart.Unix())
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, paris).Unix(), parts[3].WindowEnd.Unix())
	require.Equal(t, []backends.Status{none, backends.StatusReady, backends.StatusReady, none},
		[]backends.Status{parts[0].Status, parts[1].Status, parts[2].Status, parts[3].Status})
	require.Equal(t, []bool{true, false, false, true}, []bool{parts[0].Late, parts[1].Late, parts[2].Late, parts[3].Late})

	missing := backends.StatusNone
	require.Equal(t, []string{"2025-12-30|eu", "2025-12-31|us"}, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds", Status: &missing}))
	n, err := b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, 2, n.Missing)
	require.Equal(t, 2, n.Late)
	require.Equal(t, "2025-12-30|eu", n.OldestMissing)
	require.Equal(t, "2025-12-30|eu", n.OldestLate)
	b.publish("feeds", "2025-12-30|eu")
	n, err = b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, 1, n.Missing)
	require.Equal(t, "2025-12-31|us", n.OldestMissing)

	// Publishing checks the tuple against every dimension.
	for _, bad := range []string{"2025-12-30", "2025-12-30|fr", "2025-12-30|eu|1", "eu|2025-12-30", "2025-12-30|EU"} {
		_, err := b.s.Publish(b.ctx, "feeds", bad)
		requireCode(t, err, backends.CodeInvalidArgument, "publish %q", bad)
	}
	// A dataset without a definition takes no tuple.
	b.datasets("plain")
	_, err = b.s.Publish(b.ctx, "plain", "2025-12-30|eu")
	requireCode(t, err, backends.CodeInvalidArgument, "a tuple into a dataset without dimensions")
}

// testDimensionsRefused: what is not built yet is refused with a message
// that says what to do, and changes nothing.
func (s *suite) testDimensionsRefused(t *testing.T) {
	b := s.setup(t)
	days := partition.Def{Kind: partition.Daily, Start: "2026-01-01"}
	regions := partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}
	b.definedDataset("feeds", dimensionsDef(0, nil, dimension("date", days), dimension("region", regions)))
	b.definedDataset("daily", days)
	b.definedDataset("other", dimensionsDef(0, nil, dimension("day", days), dimension("region", regions)))

	upsert := func(def partition.Def) error {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "bad", Partitions: &def})
		return err
	}
	requireCode(t, upsert(dimensionsDef(0, nil, dimension("region", regions), dimension("date", days))), backends.CodeInvalidArgument, "time second")
	requireCode(t, upsert(dimensionsDef(0, nil, dimension("date", days))), backends.CodeInvalidArgument, "one dimension")
	requireCode(t, upsert(dimensionsDef(0, nil, dimension("date", days), dimension("date", regions))), backends.CodeInvalidArgument, "a name twice")

	for _, j := range []backends.Job{
		{ID: "rename", Output: "other", Inputs: []string{"feeds"}}, // date read whole before region
		{ID: "region-first", Output: "feeds", Inputs: []string{"regions-first"}},
		{ID: "window", Output: "feeds", Inputs: []string{"feeds2"}},
	} {
		if j.ID == "region-first" {
			b.definedDataset("regions-first", dimensionsDef(0, nil, dimension("region", regions), dimension("n", partition.Def{Kind: partition.Integer, End: "2"})))
		}
		if j.ID == "window" {
			b.definedDataset("feeds2", dimensionsDef(0, nil, dimension("date", days), dimension("region", regions)))
			j.InputMappings = []backends.InputMapping{{Dataset: "feeds2", Mapping: partition.Mapping{Kind: partition.TimeWindow}}}
		}
		_, err := b.s.UpsertJob(b.ctx, j)
		requireCode(t, err, backends.CodeInvalidArgument, "job %s", j.ID)
	}

	// A dimension whose runner variable another variable of the job has
	// already: input sales-region's CHUNKLOCK_INPUT_SALES_REGION_URL and
	// input sales' dimension region_url.
	b.definedDataset("sales", dimensionsDef(0, nil, dimension("date", days), dimension("region_url", regions)))
	b.definedDataset("sales-region", days)
	b.definedDataset("sales-out", dimensionsDef(0, nil, dimension("date", days), dimension("region_url", regions)))
	_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "clash", Output: "sales-out", Inputs: []string{"sales", "sales-region"}})
	requireCode(t, err, backends.CodeInvalidArgument, "CHUNKLOCK_INPUT_SALES_REGION_URL twice")
	require.Contains(t, err.Error(), "CHUNKLOCK_INPUT_SALES_REGION_URL")
	// ... and a definition that would bring such a clash to a job is refused.
	b.definedDataset("sales2", dimensionsDef(0, nil, dimension("date", days), dimension("region", regions)))
	b.definedDataset("sales2-region", days)
	b.job("clash2", "sales-out", "sales2", "sales2-region")
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales2", Partitions: ptr(dimensionsDef(0, nil, dimension("date", days), dimension("region_url", regions)))})
	requireCode(t, err, backends.CodeInvalidArgument, "sales2's dimension becomes region_url under clash2")
	// A variable the runner sets under the numbered prefix only is no clash:
	// input "a" with dimension b_dataset beside input "a-b".
	b.definedDataset("a", dimensionsDef(0, nil, dimension("date", days), dimension("b_dataset", regions)))
	b.definedDataset("a-b", days)
	b.definedDataset("ab-out", dimensionsDef(0, nil, dimension("date", days), dimension("b_dataset", regions)))
	b.job("no-clash", "ab-out", "a", "a-b")

	// A definition change that would leave a job reading across
	// dimensions is refused too.
	b.definedDataset("daily2", days)
	b.job("copy", "daily", "daily2")
	b.definedDataset("daily2", days) // unchanged: fine
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "daily2", Partitions: ptr(dimensionsDef(0, nil, dimension("region", regions),
		dimension("n", partition.Def{Kind: partition.Integer, End: "3"})))})
	requireCode(t, err, backends.CodeInvalidArgument, "daily2 given regions and numbers under a daily reader: every date would read all of it")
}

// testDimensionsCountsKept: the missing and late tuples of a date × region
// dataset longer than a count's window (426 days × 3 regions), counted
// from the kept counts by rank, agree with its partitions listing with a
// gap in the middle, none, and a feed running late; publishing by ranges
// of first values covers every region.
func (s *suite) testDimensionsCountsKept(t *testing.T) {
	b := s.setup(t)
	deadline := 2 * time.Hour
	def := dimensionsDef(0, &deadline, dimension("date", partition.Def{Kind: partition.Daily, Start: "2024-11-01"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu", "emea"}}))
	b.definedDataset("feeds", def)
	b.clock.Advance(3 * time.Hour)
	for _, r := range [][2]string{{"2024-11-01", "2025-06-10"}, {"2025-06-12", "2025-12-31"}} {
		res, err := b.s.PublishRange(b.ctx, "feeds", r[0], r[1])
		require.NoError(t, err)
		require.Zero(t, len(res.Skipped), "%v", res.Skipped)
	}
	b.publish("feeds", "2025-06-11|eu", "2025-06-11|emea")
	c := b.missingAsListed("feeds", "a gap in the middle")
	require.Equal(t, "2025-06-11|us", c.OldestMissing)
	require.Equal(t, 1, c.Missing)
	require.Equal(t, 1, c.Late)
	require.Equal(t, "2025-06-11|us", c.OldestLate)

	b.publish("feeds", "2025-06-11|us")
	c = b.missingAsListed("feeds", "none missing")
	require.Zero(t, c.Missing)
	require.Zero(t, c.Late)

	b.clock.Advance(2 * 24 * time.Hour) // 2026-01-01 and 2026-01-02 are due, and late
	c = b.missingAsListed("feeds", "a feed running late")
	require.Equal(t, 6, c.Missing)
	require.Equal(t, "2026-01-01|eu", c.OldestMissing)
	require.Equal(t, 6, c.Late)
	b.publish("feeds", "2026-01-01|eu")
	c = b.missingAsListed("feeds", "one of them published")
	require.Equal(t, "2026-01-01|us", c.OldestMissing)
	require.Equal(t, 5, c.Late)
}

// testDimensionsSlices: partitions and the range operations take a slice
// (SPEC §10 "Slices"): the tuples whose values of the sliced dimensions
// are listed, in tuple order, between first values or tuples.
func (s *suite) testDimensionsSlices(t *testing.T) {
	b := s.setup(t)
	def := dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-28"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu", "emea"}}))
	b.definedDataset("feeds", def)
	b.definedDataset("mart", def)
	b.job("build", "mart", "feeds")
	region := func(values ...string) []partition.Slice {
		return []partition.Slice{{Dimension: "region", Values: values}}
	}
	ranged := func(op backends.RangeOpKind, from, to string, slice []partition.Slice) backends.RangeResult {
		t.Helper()
		res, err := b.s.SlicedRange(b.ctx, backends.RangeRequest{Op: op, Dataset: "feeds", From: from, To: to, Slice: slice, Cascade: true, Reason: "checking"})
		require.NoError(t, err)
		return res
	}

	res := ranged(backends.RangePublish, "2025-12-28", "2025-12-31", region("eu"))
	require.Equal(t, 4, res.Changed)
	require.Equal(t, []string{"2025-12-28|eu", "2025-12-29|eu", "2025-12-30|eu", "2025-12-31|eu"}, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds", Slice: region("eu")}))
	for _, p := range b.partitions(backends.PartitionFilter{Dataset: "feeds", Slice: region("eu")}) {
		require.Equal(t, backends.StatusReady, p.Status, p.DataID)
	}
	for _, p := range b.partitions(backends.PartitionFilter{Dataset: "feeds", Slice: region("emea", "us", "fr")}) {
		require.Equal(t, none, p.Status, p.DataID)
	}
	require.Equal(t, []string{"2025-12-29|us", "2025-12-29|emea", "2025-12-30|us", "2025-12-30|emea"},
		b.partitionIDs(backends.PartitionFilter{Dataset: "feeds", Slice: region("emea", "us", "fr"), From: "2025-12-29", To: "2025-12-30", First: 3}),
		"a slice of two values, between first values, page by page")
	require.Empty(t, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds", Slice: region("fr")}), "no listed value is expected")

	// The dashboard's runs of one region: its dates, and per ISO week.
	span, err := b.s.PartitionRuns(b.ctx, backends.RunsFilter{Dataset: "feeds", Runs: true, Slice: region("eu")})
	require.NoError(t, err)
	require.Equal(t, []backends.PartitionRun{{From: "2025-12-28|eu", To: "2025-12-31|eu", Count: 4, Status: backends.StatusReady}}, span.Runs)
	span, err = b.s.PartitionRuns(b.ctx, backends.RunsFilter{Dataset: "feeds", Runs: true, Slice: region("us"), From: "2025-12-29", To: "2025-12-30"})
	require.NoError(t, err)
	require.Equal(t, []backends.PartitionRun{{From: "2025-12-29|us", To: "2025-12-30|us", Count: 2, Status: none}}, span.Runs)
	// Up to the date due next: the answer says when it becomes due.
	span, err = b.s.PartitionRuns(b.ctx, backends.RunsFilter{Dataset: "feeds", Runs: true, Slice: region("eu"), From: "2025-12-31", To: "2026-01-01"})
	require.NoError(t, err)
	require.Equal(t, epoch.Add(24*time.Hour).Unix(), span.ChangesAt.Unix(), "2026-01-01 is due when its day ends")
	span, err = b.s.PartitionRuns(b.ctx, backends.RunsFilter{Dataset: "feeds", Zoom: partition.Weekly, Slice: region("eu", "us")})
	require.NoError(t, err)
	var weeks []string
	for _, c := range span.Columns {
		weeks = append(weeks, fmt.Sprintf("%s..%s %d ready %d missing", c.From, c.To, c.Ready, c.Missing))
	}
	require.Equal(t, []string{"2025-W52..2025-W52 1 ready 1 missing", "2026-W01..2026-W01 3 ready 3 missing"}, weeks,
		"2025-12-28 is a Sunday: one date of two regions in W52, three in W01")
	require.Equal(t, []string{"2025-12-28|eu", "2025-12-28|us", "2025-12-28|emea"}, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds", To: "2025-12-28"}))

	require.Equal(t, []string{"2025-12-28|eu", "2025-12-29|eu", "2025-12-30|eu", "2025-12-31|eu"}, b.drain("build"))
	res = ranged(backends.RangeResubmit, "2025-12-29", "2025-12-30", region("eu"))
	require.Equal(t, 2, res.Changed)
	require.Equal(t, backends.StatusResubmit, b.status("mart", "2025-12-29|eu"), "the cascade reaches the chunk computed from it")
	require.Equal(t, backends.StatusReady, b.status("mart", "2025-12-31|eu"))
	res = ranged(backends.RangeHold, "2025-12-31", "2025-12-31", region("us", "emea"))
	require.Equal(t, 2, res.Changed)
	require.Equal(t, backends.StatusHold, b.status("feeds", "2025-12-31|us"))
	require.Equal(t, backends.StatusHold, b.status("feeds", "2025-12-31|emea"))
	require.Equal(t, backends.StatusReady, b.status("feeds", "2025-12-31|eu"))
	res = ranged(backends.RangePublish, "2025-12-28", "2025-12-28", region("fr"))
	require.Zero(t, res.Changed, "a slice of no expected value is empty")

	for _, bad := range [][]partition.Slice{
		{{Dimension: "date", Values: []string{"2025-12-28"}}},
		{{Dimension: "country", Values: []string{"eu"}}},
		{{Dimension: "region", Values: []string{"eu"}}, {Dimension: "region", Values: []string{"us"}}},
		{{Dimension: "region"}},
		{{Dimension: "region", Values: []string{"a b"}}},
	} {
		_, err := b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "feeds", Slice: bad})
		requireCode(t, err, backends.CodeInvalidArgument, "partitions slice %v", bad)
		_, err = b.s.SlicedRange(b.ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "feeds", From: "2025-12-28", To: "2025-12-28", Slice: bad})
		requireCode(t, err, backends.CodeInvalidArgument, "publish slice %v", bad)
	}
	b.definedDataset("days", partition.Def{Kind: partition.Daily, Start: "2025-12-28"})
	_, err = b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "days", Slice: region("eu")})
	requireCode(t, err, backends.CodeInvalidArgument, "a slice of a one-dimensional dataset")
}

// testDimensionsRollUp: a job reading a date × region dataset into a
// DAILY one (SPEC §10's rules: the date pairs with the time axis, the
// region is read whole) claims a date once every region of it is READY,
// reads them all, and is invalidated by a resubmit of one region; a live
// claim of it locks every region of its date.
func (s *suite) testDimensionsRollUp(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu", "emea"}})))
	b.definedDataset("global", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.job("roll", "global", "feeds")

	b.publish("feeds", "2025-12-30|us", "2025-12-30|eu", "2025-12-31|eu")
	_, d := b.next("roll")
	require.Empty(t, d, "2025-12-30|emea is not READY: the date waits for every region")
	b.publish("feeds", "2025-12-30|emea")
	c, d := b.next("roll")
	require.Equal(t, "2025-12-30", d)
	var reads []string
	for _, r := range c.Reads {
		reads = append(reads, r.DataID)
	}
	require.Equal(t, []string{"2025-12-30|eu", "2025-12-30|us", "2025-12-30|emea"}, reads, "the claim reads every region of its date")
	// The lock graph at the date draws the regions read, and no chunk of
	// feeds at the date itself, which no tuple is.
	g, err := b.s.LockGraph(b.ctx, backends.GraphFilter{DataID: "2025-12-30"})
	require.NoError(t, err)
	var nodes []string
	for _, n := range g.Nodes {
		if n.Kind == backends.NodeChunk {
			nodes = append(nodes, n.ID+" "+string(n.Status))
		}
	}
	require.ElementsMatch(t, []string{"chunk:global/2025-12-30 RUNNING", "chunk:feeds/2025-12-30|eu READY", "chunk:feeds/2025-12-30|us READY", "chunk:feeds/2025-12-30|emea READY"}, nodes)
	for _, e := range g.Edges {
		require.NotEqual(t, "chunk:feeds/2025-12-30", e.To)
	}

	_, err = b.s.Resubmit(b.ctx, "feeds", "2025-12-30|us", true)
	requireCode(t, err, backends.CodeLocked, "a region read by a live claim")
	require.Equal(t, backends.StatusReady, b.status("feeds", "2025-12-30|us"), "refused: nothing changed")
	b.complete(c)
	require.Equal(t, backends.StatusReady, b.status("global", "2025-12-30"))

	_, err = b.s.Resubmit(b.ctx, "feeds", "2025-12-30|eu", true)
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, b.status("global", "2025-12-30"), "a resubmit of one region reaches the roll-up")
	_, d = b.next("roll")
	require.Empty(t, d, "2025-12-30|eu is RESUBMIT itself: the roll-up waits for it")
	b.publish("feeds", "2025-12-30|eu")
	require.Equal(t, []string{"2025-12-30"}, b.drain("roll"))

	res, err := b.s.PublishRange(b.ctx, "feeds", "2025-12-31", "2025-12-31")
	require.NoError(t, err)
	require.Equal(t, 2, res.Changed, "eu was READY already")
	require.Equal(t, []string{"2025-12-31"}, b.drain("roll"))

	// Three dimensions rolled up into two: every product of a date and region.
	b.definedDataset("sales", threeDims())
	b.definedDataset("by-region", dimensionsDef(0, nil,
		dimension("date", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-03"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "emea", "eu"}})))
	b.job("sum", "by-region", "sales")
	b.publish("sales", "2026-01-02|us|9", "2026-01-02|us|10", "2026-01-02|eu|9")
	require.Equal(t, []string{"2026-01-02|us"}, b.drain("sum"))
	b.publish("sales", "2026-01-02|eu|10")
	require.Equal(t, []string{"2026-01-02|eu"}, b.drain("sum"))
}

// testDimensionsFanOut: a job reading a DAILY dataset into a date × region
// one reads the same input chunk for every region: each of the date's
// tuples is claimable once the date is READY, and a resubmit of the date
// reaches them all.
func (s *suite) testDimensionsFanOut(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("daily", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.definedDataset("by-region", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}})))
	b.publish("daily", "2025-12-30")
	b.job("split", "by-region", "daily") // declared after the input's chunk: its backfill finds it
	c, d := b.next("split")
	require.Equal(t, "2025-12-30|eu", d)
	require.Len(t, c.Reads, 1)
	require.Equal(t, "2025-12-30", c.Reads[0].DataID)
	b.complete(c)
	b.publish("daily", "2025-12-31")
	require.Equal(t, []string{"2025-12-30|us", "2025-12-31|eu", "2025-12-31|us"}, b.drain("split"))
	_, err := b.s.Resubmit(b.ctx, "daily", "2025-12-31", true)
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, b.status("by-region", "2025-12-31|eu"))
	require.Equal(t, backends.StatusResubmit, b.status("by-region", "2025-12-31|us"))
	require.Equal(t, backends.StatusReady, b.status("by-region", "2025-12-30|us"))
	b.publish("daily", "2025-12-31")
	require.Equal(t, []string{"2025-12-31|eu", "2025-12-31|us"}, b.drain("split"))
}

// testDimensionsAcrossRefused: what the rules across dimensions do not
// build yet is refused, saying so.
func (s *suite) testDimensionsAcrossRefused(t *testing.T) {
	b := s.setup(t)
	regions := partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}
	b.definedDataset("hours", dimensionsDef(0, nil, dimension("hour", partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00"}), dimension("region", regions)))
	b.definedDataset("days", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})
	b.definedDataset("regions", dimensionsDef(0, nil, dimension("region", regions), dimension("n", partition.Def{Kind: partition.Integer, End: "3"})))
	b.definedDataset("plain", partition.Def{Kind: partition.Integer})
	for _, j := range []backends.Job{
		{ID: "nothing-pairs", Output: "days", Inputs: []string{"regions"}},
		{ID: "no-definition", Output: "nodef", Inputs: []string{"hours"}},
		{ID: "integer", Output: "plain", Inputs: []string{"regions"}},
	} {
		if j.ID == "no-definition" {
			b.datasets("nodef")
		}
		_, err := b.s.UpsertJob(b.ctx, j)
		requireCode(t, err, backends.CodeInvalidArgument, "job %s", j.ID)
	}
}

// testDimensionsRace: 32 runners race findNext over a date × region root
// job and the roll-up reading it, taking whichever job has a chunk: every
// tuple is claimed exactly once, every date of the roll-up exactly once,
// and each roll-up claim reads its date's five regions.
func (s *suite) testDimensionsRace(t *testing.T) {
	b := s.setup(t)
	regions := []string{"r1", "r2", "r3", "r4", "r5"}
	b.definedDataset("feeds", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-01", End: "2025-12-31"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: regions})))
	b.definedDataset("global", partition.Def{Kind: partition.Daily, Start: "2025-12-01", End: "2025-12-31"})
	b.job("ingest", "feeds")
	b.job("roll", "global", "feeds")
	var wantTuples, wantDates []string
	for d := 1; d <= 31; d++ {
		date := fmt.Sprintf("2025-12-%02d", d)
		wantDates = append(wantDates, date)
		for _, r := range regions {
			wantTuples = append(wantTuples, date+"|"+r)
		}
	}
	type claim struct {
		job, dataid string
		reads       int
	}
	claims := make(chan claim, 2*(len(wantTuples)+len(wantDates)))
	errs := make(chan error, s.cfg.workers)
	workers := make(chan struct{}, s.cfg.workers)
	for w := range s.cfg.workers {
		go func() {
			defer func() { workers <- struct{}{} }()
			jobs := []string{"ingest", "roll"}
			for idle := 0; idle < 4; {
				c, err := b.s.FindNext(b.ctx, jobs[(w+idle)%2], executor)
				if err != nil {
					errs <- err
					return
				}
				if c == nil {
					idle++
					continue
				}
				idle = 0
				claims <- claim{c.Job, c.DataID, len(c.Reads)}
				if err := b.s.Complete(b.ctx, c.Token); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range s.cfg.workers {
		<-workers
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// The runners stop after a few empty findNexts in a row, which a race
	// may give while chunks are left: finish what is left, one at a time
	// (every claim still counts once).
	for _, job := range []string{"ingest", "roll"} {
		for c, _ := b.next(job); c != nil; c, _ = b.next(job) {
			claims <- claim{job, c.DataID, len(c.Reads)}
			b.complete(c)
		}
	}
	close(claims)
	var tuples, dates []string
	for c := range claims {
		if c.job == "ingest" {
			tuples = append(tuples, c.dataid)
			continue
		}
		dates = append(dates, c.dataid)
		require.Equal(t, 5, c.reads, "roll-up of %s reads its five regions", c.dataid)
	}
	slices.SortFunc(tuples, backends.CompareDataID)
	slices.Sort(dates)
	require.Equal(t, wantTuples, tuples, "every tuple claimed exactly once")
	require.Equal(t, wantDates, dates, "every date rolled up exactly once")
}

// testDimensionsAcrossByProduct: by the default rules, shapes whose tuples
// read are no run of the input's: hour × region read into days (each day
// reads its 24 hours of every region, and waits for them all), and the
// dimensions read by value in another order on the two sides (each tuple
// reads its own).
func (s *suite) testDimensionsAcrossByProduct(t *testing.T) {
	b := s.setup(t)
	regions := partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}
	b.definedDataset("hours", dimensionsDef(0, nil, dimension("hour", partition.Def{Kind: partition.Hourly, Start: "2026-01-01T00", End: "2026-01-02T23"}),
		dimension("region", regions)))
	b.definedDataset("days", partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-02"})
	b.job("hourly-to-daily", "days", "hours")
	var day []string
	for h := range 24 {
		for _, r := range []string{"eu", "us"} {
			day = append(day, "2026-01-01T"+twoDigits(h)+"|"+r)
		}
	}
	b.publish("hours", day[:47]...)
	_, d := b.next("hourly-to-daily")
	require.Empty(t, d, "2026-01-01T23|us is not READY")
	b.publish("hours", day[47])
	c, d := b.next("hourly-to-daily")
	require.Equal(t, "2026-01-01", d)
	require.Equal(t, day, claimReadIDs(c), "every hour of every region")
	b.complete(c)

	days, custs := partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-02"}, partition.Def{Kind: partition.Static, Values: []string{"a", "b"}}
	b.definedDataset("by-region", dimensionsDef(0, nil, dimension("date", days), dimension("region", regions), dimension("cust", custs)))
	b.definedDataset("by-customer", dimensionsDef(0, nil, dimension("date", days), dimension("cust", custs), dimension("region", regions)))
	b.job("permuted", "by-customer", "by-region")
	b.publish("by-region", "2026-01-01|us|b", "2026-01-01|eu|a")
	require.Equal(t, []string{"2026-01-01|a|eu", "2026-01-01|b|us"}, b.drain("permuted"))
	_, err := b.s.Claim(b.ctx, "permuted", "2026-01-02|a|us", executor)
	requireCode(t, err, backends.CodeLocked, "2026-01-02|us|a is not READY")
	_, err = b.s.Resubmit(b.ctx, "by-region", "2026-01-01|us|b", true)
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, b.status("by-customer", "2026-01-01|b|us"), "the cascade reaches the tuple that read it")
	require.Equal(t, backends.StatusReady, b.status("by-customer", "2026-01-01|a|eu"))
}
