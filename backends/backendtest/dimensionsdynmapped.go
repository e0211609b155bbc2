package backendtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// DYNAMIC dimensions read through mappings by dimension (SPEC §10): an
// entry naming the date dimension, the customer dimension read by value
// (the output has one of the same name: it takes the input's values) or
// whole (a total over every customer: not due at a day no customer is
// expected at, and offered again when the customer it waits for is
// removed); and a job declared after the values, whose output, and every
// dataset fed from it, takes them, checked as an add is.
var dynamicByDimensionTests = []testCase{
	{"DimensionsDynamicByDimensionFed", (*suite).testDimensionsDynamicByDimensionFed},
	{"DimensionsDynamicByDimensionTotal", (*suite).testDimensionsDynamicByDimensionTotal},
	{"DimensionsDynamicFedLater", (*suite).testDimensionsDynamicFedLater},
	{"DimensionsDynamicLookbackBeforeValue", (*suite).testDimensionsDynamicLookbackBeforeValue},
	{"DimensionsDynamicUpsertAgain", (*suite).testDimensionsDynamicUpsertAgain},
	{"DimensionsDynamicValuesNotFed", (*suite).testDimensionsDynamicValuesNotFed},
}

// A job applied again unchanged gives its output no value: a value
// removed from one of two inputs joined by customer is removed from the
// output (its tuples would read a tuple the input no longer has), and an
// operator's remove of a value of a fed dataset stays.
func (s *suite) testDimensionsDynamicUpsertAgain(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("a", dateByCustomer("2025-12-30", nil))
	b.definedDataset("bb", dateByCustomer("2025-12-30", nil))
	b.definedDataset("joined", dateByCustomer("2025-12-30", nil))
	b.job("join", "joined", "a", "bb")
	b.addTo("a", "customer", "2025-12-30", "acme", "bolt")
	b.addTo("bb", "customer", "2025-12-30", "acme", "bolt")
	require.Equal(t, []string{"acme@2025-12-30", "bolt@2025-12-30"}, b.membersOf("joined", "customer"))
	_, err := b.s.RemovePartitions(b.ctx, "a", []string{"acme"}, "customer")
	require.NoError(t, err)
	_, err = b.s.RemovePartitions(b.ctx, "joined", []string{"bolt"}, "customer")
	require.NoError(t, err)
	require.Empty(t, b.membersOf("joined", "customer"))
	b.job("join", "joined", "a", "bb")
	require.Empty(t, b.membersOf("joined", "customer"), "an unchanged job applied again")
	// Declared again with another input, it takes its inputs' values.
	b.definedDataset("cc", dateByCustomer("2025-12-30", nil))
	b.addTo("cc", "customer", "2025-12-30", "cora")
	b.job("join", "joined", "a", "bb", "cc")
	require.Equal(t, []string{"acme@2025-12-30", "bolt@2025-12-30", "cora@2025-12-30"}, b.membersOf("joined", "customer"))
}

// A lookback of the day before, customer by value, at a customer's first
// day maps to a day the customer is not expected at: it reads nothing, as
// a lookback before a definition's start does (section 9), and is not
// NOT_DUE for ever. findNext offers it as soon as the customer is added
// (nothing it reads will become READY to queue it), and a customer's
// first two days under a lookback of two days before. A customer the
// input does not have is not due.
func (s *suite) testDimensionsDynamicLookbackBeforeValue(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("orders", dateByCustomer("2025-12-30", nil))
	b.definedDataset("prev", dateByCustomer("2025-12-30", nil))
	b.upsertJob(backends.Job{ID: "prevj", Inputs: []string{"orders"}, Output: "prev", InputMappings: []backends.InputMapping{
		{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, EndOffset: -1, Dimension: "date", OutputDimension: "date"}}}})
	b.addTo("orders", "customer", "2025-12-30", "acme")
	require.Equal(t, []string{"acme@2025-12-30"}, b.membersOf("prev", "customer"))
	bs, err := b.s.Blockers(b.ctx, "prevj", "2025-12-30|acme")
	require.NoError(t, err)
	require.Empty(t, bs, "the first day reads the day before, which no value of the input is expected at")
	c, d := b.next("prevj")
	require.Equal(t, "2025-12-30|acme", d, "offered before anything is published: it reads nothing")
	require.Empty(t, claimReadIDs(c))
	b.complete(c)
	c, d = b.next("prevj")
	require.Nil(t, c, d)
	b.publish("orders", "2025-12-30|acme")
	c, d = b.next("prevj")
	require.Equal(t, "2025-12-31|acme", d)
	require.Equal(t, []string{"2025-12-30|acme"}, claimReadIDs(c))
	b.complete(c)

	// A job declared after a customer, under a lookback of two days
	// before (its output takes the customer: the first two days read
	// nothing), then a customer added with a backfill from the day before
	// today: its first two days read nothing, for either job.
	b.definedDataset("prev2", dateByCustomer("2025-12-30", nil))
	b.upsertJob(backends.Job{ID: "prev2j", Inputs: []string{"orders"}, Output: "prev2", InputMappings: []backends.InputMapping{
		{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -2, EndOffset: -2, Dimension: "date", OutputDimension: "date"}}}})
	require.Equal(t, []string{"2025-12-30|acme <- []", "2025-12-31|acme <- []", "2026-01-01|acme <- [2025-12-30|acme]"}, b.drainReads("prev2j"))
	b.addTo("orders", "customer", "2025-12-31", "bolt")
	require.Equal(t, []string{"2025-12-31|bolt <- []", "2026-01-01|bolt <- []"}, b.drainReads("prev2j"))
	require.Equal(t, []string{"2025-12-31|bolt <- []"}, b.drainReads("prevj"))

	// The same day a week before: each customer's first seven days read
	// nothing, days not begun included (claimable as any output whose
	// reads are READY is: acme's 2026-01-06, whose week before is).
	b.definedDataset("lastweek", dateByCustomer("2025-12-30", nil))
	b.upsertJob(backends.Job{ID: "lastweekj", Inputs: []string{"orders"}, Output: "lastweek", InputMappings: []backends.InputMapping{
		{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -7, EndOffset: -7, Dimension: "date", OutputDimension: "date"}}}})
	// One of them claimed, completed and resubmitted before findNext
	// reaches it: it comes first (RESUBMIT), and the rest after it.
	c, err = b.s.Claim(b.ctx, "lastweekj", "2025-12-31|bolt", executor)
	require.NoError(t, err)
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "lastweek", "2025-12-31|bolt", false)
	require.NoError(t, err)
	want := []string{"2025-12-31|bolt <- []"}
	for _, d := range []string{"2025-12-30", "2025-12-31", "2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05", "2026-01-06"} {
		for _, c := range []string{"acme", "bolt"} {
			switch {
			case d == "2025-12-31" && c == "bolt":
			case d == "2025-12-30" && c == "bolt":
			case d == "2026-01-06" && c == "acme":
				want = append(want, d+"|acme <- [2025-12-30|acme]")
			default:
				want = append(want, d+"|"+c+" <- []")
			}
		}
	}
	require.Equal(t, want, b.drainReads("lastweekj"))

	// A customer removed and added again: its days whose week before is
	// READY are offered again, however far from its first days.
	b.clock.Advance(15 * 24 * time.Hour)
	b.publish("orders", "2026-01-05|bolt")
	_, err = b.s.RemovePartitions(b.ctx, "orders", []string{"bolt"}, "customer")
	require.NoError(t, err)
	require.Empty(t, b.drainReads("lastweekj"))
	b.addTo("orders", "customer", "2025-12-31", "bolt")
	require.Equal(t, []string{"2026-01-12|bolt <- [2026-01-05|bolt]"}, b.drainReads("lastweekj"))

	// A customer of the output alone would read what is not the input's:
	// the add is refused (DimensionsDynamicFedRefused).
	_, err = b.s.AddPartitions(b.ctx, "prev", []string{"zeta"}, "customer", "2025-12-30")
	requireCode(t, err, backends.CodeInvalidArgument)
}

// drainReads claims and completes job's chunks by findNext until none is
// claimable, and lists each as "dataid <- [reads]".
func (b *bundle) drainReads(job string) []string {
	b.t.Helper()
	var out []string
	for range 100 {
		c, d := b.next(job)
		if c == nil {
			return out
		}
		out = append(out, fmt.Sprintf("%s <- %v", d, claimReadIDs(c)))
		b.complete(c)
	}
	b.t.Fatalf("findNext %s: still claiming after 100 chunks", job)
	return nil
}

// lookbackByCustomer is a 2-day lookback of date × customer, by customer.
var lookbackByCustomer = []backends.InputMapping{{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, Dimension: "date", OutputDimension: "date"}}}

func (s *suite) testDimensionsDynamicByDimensionFed(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("orders", dateByCustomer("2025-12-30", nil))
	b.definedDataset("orders2d", dateByCustomer("2025-12-30", nil))
	// Declared before any customer: nothing expected yet, no error.
	b.upsertJob(backends.Job{ID: "roll2", Inputs: []string{"orders"}, Output: "orders2d", InputMappings: lookbackByCustomer})
	b.addTo("orders", "customer", "2025-12-30", "acme")
	require.Equal(t, []string{"acme@2025-12-30"}, b.membersOf("orders2d", "customer"), "the lookback reads customer by value: its output takes the values")
	b.publish("orders", "2025-12-30|acme", "2025-12-31|acme")
	require.Equal(t, []string{"2025-12-30|acme <- [2025-12-30|acme]", "2025-12-31|acme <- [2025-12-30|acme 2025-12-31|acme]"}, b.drainReads("roll2"))
	// Every value removed, from the input and so from the output: the
	// job's mapping still holds.
	_, err := b.s.RemovePartitions(b.ctx, "orders", []string{"acme"}, "customer")
	require.NoError(t, err)
	require.Empty(t, b.membersOf("orders2d", "customer"))

	// Hours × customer into days × customer (an entry mapping the hours
	// of each day, customer by value), and into daily totals by the
	// default rules (the hours of the day, every customer).
	b.definedDataset("clicks", dimensionsDef(0, nil, dimension("hour", partition.Def{Kind: partition.Hourly, Start: "2025-12-31T00"}),
		dimension("customer", partition.Def{Kind: partition.Dynamic})))
	b.definedDataset("daily-clicks", dateByCustomer("2025-12-31", nil))
	b.definedDataset("click-totals", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.upsertJob(backends.Job{ID: "days", Inputs: []string{"clicks"}, Output: "daily-clicks", InputMappings: []backends.InputMapping{
		{Dataset: "clicks", Mapping: partition.Mapping{Kind: partition.TimeWindow, Dimension: "hour", OutputDimension: "date"}}}})
	b.job("totals", "click-totals", "clicks")
	b.addTo("clicks", "customer", "2025-12-31T00", "x1")
	require.Equal(t, []string{"x1@2025-12-31"}, b.membersOf("daily-clicks", "customer"))
	var hours []string
	for h := range 24 {
		hours = append(hours, fmt.Sprintf("2025-12-31T%02d|x1", h))
	}
	b.publish("clicks", hours...)
	c, d := b.next("days")
	require.Equal(t, "2025-12-31|x1", d)
	require.Equal(t, hours, claimReadIDs(c))
	b.complete(c)
	_, err = b.s.Claim(b.ctx, "totals", "2025-12-30", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "click-totals", "2025-12-30", time.Time{})
	c, d = b.next("totals")
	require.Equal(t, "2025-12-31", d)
	require.Equal(t, hours, claimReadIDs(c))
	b.complete(c)
}

func (s *suite) testDimensionsDynamicByDimensionTotal(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("orders", dateByCustomer("2025-12-30", nil))
	b.definedDataset("total2d", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.upsertJob(backends.Job{ID: "tot", Inputs: []string{"orders"}, Output: "total2d", InputMappings: []backends.InputMapping{
		{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, Dimension: "date"}}}})
	// No customer yet: no day is due, none missing.
	c0, err := b.s.PartitionCounts(b.ctx, "total2d")
	require.NoError(t, err)
	require.Zero(t, c0.Missing)
	require.Empty(t, b.partitionIDs(backends.PartitionFilter{Dataset: "total2d", Status: ptr(backends.StatusNone)}))
	// A customer expected from today: the days before read no tuple, and
	// are not due (as a roll-up across dimensions).
	b.addTo("orders", "customer", "", "acme")
	bs, err := b.s.Blockers(b.ctx, "tot", "2025-12-30")
	require.NoError(t, err)
	blockerUntil(t, bs, backends.BlockerNotDue, "total2d", "2025-12-30", time.Time{})
	_, err = b.s.Claim(b.ctx, "tot", "2025-12-30", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "total2d", "2025-12-30", time.Time{})
	require.Empty(t, b.drain("tot"))

	// A total waiting for a customer that is then removed is offered.
	b.definedDataset("sales", dateByCustomer("2025-12-30", nil))
	b.definedDataset("sales-total", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.upsertJob(backends.Job{ID: "sales-tot", Inputs: []string{"sales"}, Output: "sales-total", InputMappings: []backends.InputMapping{
		{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, Dimension: "date"}}}})
	b.addTo("sales", "customer", "2025-12-30", "acme", "beta")
	b.publish("sales", "2025-12-30|acme", "2025-12-31|acme")
	require.Empty(t, b.drain("sales-tot"), "waiting for beta")
	_, err = b.s.RemovePartitions(b.ctx, "sales", []string{"beta"}, "customer")
	require.NoError(t, err)
	// 2026-01-01 is not over: nothing after these two.
	require.Equal(t, []string{"2025-12-30 <- [2025-12-30|acme]", "2025-12-31 <- [2025-12-30|acme 2025-12-31|acme]"}, b.drainReads("sales-tot"))
	// Not due, so neither missing nor late: the days before the first
	// customer's are not counted, nor listed.
	b.clock.Advance(30 * time.Hour) // 2026-01-02 06:00: 2026-01-01 is due
	c0, err = b.s.PartitionCounts(b.ctx, "total2d")
	require.NoError(t, err)
	require.Equal(t, []any{1, "2026-01-01"}, []any{c0.Missing, c0.OldestMissing}, "only acme's first day is due")
	require.Equal(t, []string{"2026-01-01"}, b.partitionIDs(backends.PartitionFilter{Dataset: "total2d", Status: ptr(backends.StatusNone)}))
	b.addTo("orders", "customer", "2025-12-31", "bolt") // a backfill: 2025-12-31 is due now
	c0, err = b.s.PartitionCounts(b.ctx, "total2d")
	require.NoError(t, err)
	require.Equal(t, []any{2, "2025-12-31"}, []any{c0.Missing, c0.OldestMissing})
}

func (s *suite) testDimensionsDynamicFedLater(t *testing.T) {
	b := s.setup(t)
	// orders -> clean -> clean2, clean2's job declared first: declaring
	// clean's job gives the values to clean and to clean2.
	b.definedDataset("orders", dateByCustomer("2025-12-30", nil))
	b.definedDataset("clean", dateByCustomer("2025-12-30", nil))
	b.definedDataset("clean2", dateByCustomer("2025-12-30", nil))
	b.addTo("orders", "customer", "2025-12-30", "acme")
	b.job("j2", "clean2", "clean")
	b.job("j1", "clean", "orders")
	require.Equal(t, []string{"acme@2025-12-30"}, b.membersOf("clean", "customer"))
	require.Equal(t, []string{"acme@2025-12-30"}, b.membersOf("clean2", "customer"))
	b.publish("orders", "2025-12-30|acme", "2025-12-31|acme")
	require.Equal(t, []string{"2025-12-30|acme", "2025-12-31|acme"}, b.drain("j1"))
	require.Equal(t, []string{"2025-12-30|acme", "2025-12-31|acme"}, b.drain("j2"))

	// The values a job would give its output are checked as an add: a
	// roll-up reading the output would read more than a claim may, so the
	// job is refused, naming the roll-up, and nothing changes.
	wide := func() partition.Def {
		return dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
			dimension("region", partition.Def{Kind: partition.Static, Values: []string{"r1", "r2", "r3", "r4"}}),
			dimension("customer", partition.Def{Kind: partition.Dynamic}))
	}
	b.definedDataset("wide", wide())
	b.definedDataset("wide-clean", wide())
	b.definedDataset("wide-total", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.job("wide-roll", "wide-total", "wide-clean")
	values := make([]string, partition.MaxMapped/4+1)
	for i := range values {
		values[i] = fmt.Sprintf("c%05d", i)
	}
	b.addTo("wide", "customer", "2025-12-30", values...)
	_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "wide-cl", Inputs: []string{"wide"}, Output: "wide-clean"})
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), "wide-roll")
	require.Empty(t, b.membersOf("wide-clean", "customer"))
	_, err = b.s.Job(b.ctx, "wide-cl")
	requireCode(t, err, backends.CodeNotFound)
}

// Values added to an output whose job reads no input by that dimension (a
// daily input fanned out to each customer, a LATEST snapshot read by
// every customer): their tuples may read chunks READY already, which
// nothing publishes again, so findNext offers them, from the backfill's
// first day, once each.
func (s *suite) testDimensionsDynamicValuesNotFed(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("daily", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.definedDataset("per-customer", dateByCustomer("2025-12-30", nil))
	b.job("split", "per-customer", "daily")
	b.addTo("per-customer", "customer", "2025-12-30", "acme")
	b.publish("daily", "2025-12-30", "2025-12-31")
	require.Equal(t, []string{"2025-12-30|acme <- [2025-12-30]", "2025-12-31|acme <- [2025-12-31]"}, b.drainReads("split"))
	b.addTo("per-customer", "customer", "2025-12-30", "beta")
	require.Equal(t, []string{"2025-12-30|beta <- [2025-12-30]", "2025-12-31|beta <- [2025-12-31]"}, b.drainReads("split"))
	b.addTo("per-customer", "customer", "", "gamma") // from today: its day reads a chunk not READY yet
	require.Empty(t, b.drainReads("split"))
	b.publish("daily", "2026-01-01")
	require.Equal(t, []string{"2026-01-01|acme <- [2026-01-01]", "2026-01-01|beta <- [2026-01-01]", "2026-01-01|gamma <- [2026-01-01]"}, b.drainReads("split"))

	b.definedDataset("rates", partition.Def{Kind: partition.Daily, Start: "2025-12-28"})
	b.definedDataset("priced", dateByCustomer("2025-12-30", nil))
	b.upsertJob(backends.Job{ID: "price", Inputs: []string{"rates"}, Output: "priced",
		InputMappings: []backends.InputMapping{{Dataset: "rates", Mapping: partition.Mapping{Kind: partition.Latest, OutputDimension: "date"}}}})
	b.publish("rates", "2025-12-29")
	b.addTo("priced", "customer", "2025-12-30", "acme")
	require.Equal(t, []string{"2025-12-30|acme <- [2025-12-29]", "2025-12-31|acme <- [2025-12-29]", "2026-01-01|acme <- [2025-12-29]"}, b.drainReads("price"))
}
