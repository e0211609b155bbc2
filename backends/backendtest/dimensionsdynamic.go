package backendtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// DYNAMIC dimensions (SPEC §10): a dimension whose values are added and
// removed at run time (addPartitions with a dimension). Beside a time
// dimension a value is expected from the window in which it was added, or
// from the add's from; the values flow to the outputs of jobs that read the
// dimension by value. The suite's clock starts at 2026-01-01 00:00 UTC; the
// expected tuples are written out by hand.

var dynamicDimensionTests = []testCase{
	{"DimensionsDynamicRoot", (*suite).testDimensionsDynamicRoot},
	{"DimensionsDynamicRemove", (*suite).testDimensionsDynamicRemove},
	{"DimensionsDynamicRefused", (*suite).testDimensionsDynamicRefused},
	{"DimensionsDynamicFedRefused", (*suite).testDimensionsDynamicFedRefused},
	{"DimensionsDynamicJobLater", (*suite).testDimensionsDynamicJobLater},
	{"DimensionsDynamicCounts", (*suite).testDimensionsDynamicCounts},
	{"DimensionsDynamicRollUp", (*suite).testDimensionsDynamicRollUp},
	{"DimensionsDynamicRace", (*suite).testDimensionsDynamicRace},
}

// dateByCustomer is date (DAILY from start) × customer (DYNAMIC).
func dateByCustomer(start string, deadline *time.Duration) partition.Def {
	return dimensionsDef(0, deadline, dimension("date", partition.Def{Kind: partition.Daily, Start: start}),
		dimension("customer", partition.Def{Kind: partition.Dynamic}))
}

// addTo adds values to dimension dim of dataset, expected from from ("":
// now), and returns the result.
func (b *bundle) addTo(dataset, dim, from string, values ...string) backends.RangeResult {
	b.t.Helper()
	res, err := b.s.AddPartitions(b.ctx, dataset, values, dim, from)
	require.NoError(b.t, err, "addPartitions %s %s %v", dataset, dim, values)
	return res
}

// membersOf lists the values of dimension dim of dataset and the dataid
// each is expected from, "value@from", in shortlex order of the values.
func (b *bundle) membersOf(dataset, dim string) []string {
	b.t.Helper()
	ds, err := b.s.Dataset(b.ctx, dataset)
	require.NoError(b.t, err)
	for i, d := range ds.Partitions.Dimensions {
		if d.Name == dim {
			var out []string
			for _, m := range ds.Partitions.DimensionMembers(i) {
				out = append(out, m.Value+"@"+m.ExpectedFrom)
			}
			return out
		}
	}
	b.t.Fatalf("dataset %s has no dimension %s", dataset, dim)
	return nil
}

// testDimensionsDynamicRoot: a job without inputs producing date ×
// customer claims each customer from the day it was added, and a backfill
// from the day the add asks; a job reading it by customer gets the values
// too and reads each tuple once.
func (s *suite) testDimensionsDynamicRoot(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dateByCustomer("2025-12-28", nil))
	b.definedDataset("mart", dateByCustomer("2025-12-28", nil))
	b.job("ingest", "feeds")
	b.job("build", "mart", "feeds")
	require.Empty(t, b.drain("ingest"), "no customer yet: nothing expected")
	require.Empty(t, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds"}))

	res := b.addTo("feeds", "customer", "", "acme")
	require.Equal(t, 1, res.Changed)
	require.Equal(t, []string{"acme@2026-01-01"}, b.membersOf("feeds", "customer"), "expected from the window of the add")
	require.Equal(t, []string{"acme@2026-01-01"}, b.membersOf("mart", "customer"), "the reader's output takes the value")
	require.Empty(t, b.drain("ingest"), "2026-01-01 is not due before its end")
	b.clock.Advance(24 * time.Hour)
	require.Equal(t, []string{"2026-01-01|acme"}, b.drain("ingest"))
	require.Equal(t, []string{"2026-01-01|acme"}, b.drain("build"))

	res = b.addTo("feeds", "customer", "2025-12-30", "beta")
	require.Equal(t, 1, res.Changed)
	require.Equal(t, []string{"acme@2026-01-01", "beta@2025-12-30"}, b.membersOf("feeds", "customer"))
	require.Equal(t, []string{"2025-12-30|beta", "2025-12-31|beta", "2026-01-01|beta"}, b.drain("ingest"), "the backfill, oldest first")
	require.Equal(t, []string{"2025-12-30|beta", "2025-12-31|beta", "2026-01-01|beta"}, b.drain("build"))
	require.Equal(t, []string{"2025-12-30|beta", "2025-12-31|beta", "2026-01-01|acme", "2026-01-01|beta"},
		b.partitionIDs(backends.PartitionFilter{Dataset: "feeds"}))
	for _, p := range b.partitions(backends.PartitionFilter{Dataset: "mart"}) {
		require.Equal(t, backends.StatusReady, p.Status, p.DataID)
	}

	// A value added again is skipped, saying since when it is expected;
	// a value sorting before the others is claimed in its place.
	res = b.addTo("feeds", "customer", "", "acme", "aaa")
	require.Equal(t, 1, res.Changed)
	require.Len(t, res.Skipped, 1)
	require.Equal(t, backends.CodeAlreadyExists, res.Skipped[0].Code)
	require.Contains(t, res.Skipped[0].Reason, "expected from 2026-01-01")
	b.clock.Advance(24 * time.Hour)
	require.Equal(t, []string{"2026-01-02|aaa", "2026-01-02|acme", "2026-01-02|beta"}, b.drain("ingest"))
	require.Equal(t, []string{"2026-01-02|aaa", "2026-01-02|acme", "2026-01-02|beta"}, b.drain("build"))

	// An upsert of the definition (apply) keeps the values; the runner
	// sees each claim's customer.
	b.definedDataset("feeds", dateByCustomer("2025-12-28", nil))
	require.Equal(t, []string{"aaa@2026-01-02", "acme@2026-01-01", "beta@2025-12-30"}, b.membersOf("feeds", "customer"))
	b.clock.Advance(24 * time.Hour)
	c, d := b.next("ingest")
	require.Equal(t, "2026-01-03|aaa", d)
	require.Equal(t, []backends.DimensionValue{{Name: "date", Value: "2026-01-03"}, {Name: "customer", Value: "aaa"}},
		backends.DimensionValues(backends.Dataset{Partitions: b.definition("feeds")}, c.DataID))
	b.complete(c)

	// Each add is a catalog change of its own, listing its values.
	var adds []string
	for _, ch := range b.changes(backends.ChangeFilter{Dataset: "feeds", First: 100}).Changes {
		if ch.Op == "addPartitions" {
			var rec struct {
				Dimension string
				Added     []string
				Count     int
			}
			require.NoError(t, json.Unmarshal(ch.Before, &rec))
			adds = append(adds, fmt.Sprintf("%s:%v", rec.Dimension, rec.Added))
		}
	}
	require.Equal(t, []string{"customer:[aaa]", "customer:[beta]", "customer:[acme]"}, adds, "newest first")
}

// definition is the partition definition of dataset.
func (b *bundle) definition(dataset string) *partition.Def {
	b.t.Helper()
	ds, err := b.s.Dataset(b.ctx, dataset)
	require.NoError(b.t, err)
	return ds.Partitions
}

// testDimensionsDynamicRemove: removing a value stops expecting it, here
// and downstream, and keeps its chunks; added again it is expected from
// then on.
func (s *suite) testDimensionsDynamicRemove(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dateByCustomer("2025-12-30", nil))
	b.definedDataset("mart", dateByCustomer("2025-12-30", nil))
	b.job("ingest", "feeds")
	b.job("build", "mart", "feeds")
	b.addTo("feeds", "customer", "2025-12-30", "acme", "beta")
	require.Equal(t, []string{"2025-12-30|acme", "2025-12-30|beta", "2025-12-31|acme", "2025-12-31|beta"}, b.drain("ingest"))
	require.Len(t, b.drain("build"), 4)

	res, err := b.s.RemovePartitions(b.ctx, "feeds", []string{"beta", "nope"}, "customer")
	require.NoError(t, err)
	require.Equal(t, 1, res.Changed)
	require.Equal(t, []backends.RangeSkip{{DataID: "nope", Code: backends.CodeNotFound, Reason: "not in the set"}}, res.Skipped)
	require.Equal(t, []string{"acme@2025-12-30"}, b.membersOf("feeds", "customer"))
	require.Equal(t, []string{"acme@2025-12-30"}, b.membersOf("mart", "customer"), "removed downstream too")
	require.Equal(t, []string{"2025-12-30|acme", "2025-12-31|acme"}, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds"}))
	require.Equal(t, backends.StatusReady, b.status("feeds", "2025-12-31|beta"), "its chunks stay")
	page, err := b.s.Chunks(b.ctx, backends.ChunkFilter{Dataset: "mart"})
	require.NoError(t, err)
	require.Len(t, page.Rows, 4, "the reader's chunks stay too")

	b.clock.Advance(24 * time.Hour)
	require.Equal(t, []string{"2026-01-01|acme"}, b.drain("ingest"), "a removed value is not claimed")
	_, err = b.s.Publish(b.ctx, "feeds", "2026-01-01|beta")
	requireCode(t, err, backends.CodeInvalidArgument, "a removed value is not expected")
	c, err := b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Zero(t, c.Missing, "its old chunks are no longer counted")

	b.addTo("feeds", "customer", "", "beta")
	require.Equal(t, []string{"acme@2025-12-30", "beta@2026-01-02"}, b.membersOf("feeds", "customer"), "expected from the new add")
	b.clock.Advance(24 * time.Hour)
	require.Equal(t, []string{"2026-01-02|acme", "2026-01-02|beta"}, b.drain("ingest"))
	require.Equal(t, []string{"2026-01-01|acme", "2026-01-02|acme", "2026-01-02|beta"}, b.drain("build"))
}

// testDimensionsDynamicRefused: what an add or a remove may not do is
// refused, naming what to give instead, and changes nothing.
func (s *suite) testDimensionsDynamicRefused(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}}),
		dimension("customer", partition.Def{Kind: partition.Dynamic})))
	b.definedDataset("untimed", dimensionsDef(0, nil, dimension("region", partition.Def{Kind: partition.Static, Values: []string{"eu"}}),
		dimension("customer", partition.Def{Kind: partition.Dynamic})))
	for _, c := range []struct {
		dataset, dim, from, want string
		values                   []string
	}{
		{"feeds", "", "", "name the DYNAMIC dimension", []string{"a"}},
		{"feeds", "region", "", "no DYNAMIC dimension \"region\"", []string{"a"}},
		{"feeds", "customer", "2025-13-01", "from \"2025-13-01\"", []string{"a"}},
		{"feeds", "customer", "", "invalid character", []string{"a|b"}},
		{"untimed", "customer", "2025-12-30", "beside a time dimension", []string{"a"}},
	} {
		_, err := b.s.AddPartitions(b.ctx, c.dataset, c.values, c.dim, c.from)
		requireCode(t, err, backends.CodeInvalidArgument, "%+v", c)
		require.Contains(t, err.Error(), c.want)
	}
	require.Empty(t, b.membersOf("feeds", "customer"))
	// Values in a declaration are refused: they are added at run time.
	_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "decl", Partitions: ptr(dimensionsDef(0, nil,
		dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("customer", partition.Def{Kind: partition.Dynamic, Values: []string{"a"}})))})
	requireCode(t, err, backends.CodeInvalidArgument, "values declared for a DYNAMIC dimension")
	// An untimed dimension's values are expected at once.
	b.addTo("untimed", "customer", "", "b", "a")
	require.Equal(t, []string{"eu|a", "eu|b"}, b.partitionIDs(backends.PartitionFilter{Dataset: "untimed"}))
	require.Equal(t, []string{"a@", "b@"}, b.membersOf("untimed", "customer"))
}

// testDimensionsDynamicFedRefused: the values of a dimension fed from a
// job's input (mart's customers are feeds') are added at that input. An
// add to mart itself was taken, and then a roll-up of mart across
// customers waited for ever on a chunk never due. It is refused, naming
// the input, and changes nothing; once no job feeds it, mart's own values
// may be added. (A remove of a fed value is taken:
// DimensionsDynamicUpsertAgain.)
func (s *suite) testDimensionsDynamicFedRefused(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dateByCustomer("2025-12-28", nil))
	b.definedDataset("mart", dateByCustomer("2025-12-28", nil))
	b.job("build", "mart", "feeds")
	b.addTo("feeds", "customer", "", "acme")
	_, err := b.s.AddPartitions(b.ctx, "mart", []string{"zed"}, "customer", "")
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), `come from dataset "feeds" (job "build" reads them by value): add them there`)
	require.Equal(t, []string{"acme@2026-01-01"}, b.membersOf("mart", "customer"))
	require.NoError(t, b.s.DeleteJob(b.ctx, "build"))
	b.addTo("mart", "customer", "", "zed")
	require.ElementsMatch(t, []string{"acme@2026-01-01", "zed@2026-01-01"}, b.membersOf("mart", "customer"))
}

// testDimensionsDynamicJobLater: a job declared after values were added to
// its input's dimension gives its output those values, each expected from
// where it is in the input, and backfills what its input has READY.
func (s *suite) testDimensionsDynamicJobLater(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dateByCustomer("2025-12-30", nil))
	b.addTo("feeds", "customer", "2025-12-31", "acme")
	b.addTo("feeds", "customer", "", "beta")
	b.clock.Advance(24 * time.Hour)
	b.publish("feeds", "2025-12-31|acme", "2026-01-01|acme", "2026-01-01|beta")
	b.definedDataset("mart", dateByCustomer("2025-12-30", nil))
	b.job("build", "mart", "feeds")
	require.Equal(t, []string{"acme@2025-12-31", "beta@2026-01-01"}, b.membersOf("mart", "customer"))
	require.Equal(t, []string{"2025-12-31|acme", "2026-01-01|acme", "2026-01-01|beta"}, b.drain("build"))
	// A bad value is refused in the name of the dataset it was added to,
	// not of an output it would flow to.
	_, err := b.s.AddPartitions(b.ctx, "feeds", []string{"a|b"}, "customer", "")
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), `dataset "feeds"`)
	require.NotContains(t, err.Error(), "mart")
}

// testDimensionsDynamicCounts: an added customer is missing (and late)
// from the day it was added, not over the whole history: adding one makes
// no storm of late chunks, and the counts agree with the listing.
func (s *suite) testDimensionsDynamicCounts(t *testing.T) {
	b := s.setup(t)
	deadline := 2 * time.Hour
	b.definedDataset("feeds", dateByCustomer("2024-01-01", &deadline))
	b.clock.Advance(3 * time.Hour) // 2025-12-31 is late from 02:00
	b.addTo("feeds", "customer", "2024-01-01", "old")
	res, err := b.s.PublishRange(b.ctx, "feeds", "2024-01-01", "2025-12-31")
	require.NoError(t, err)
	require.Equal(t, 731, res.Changed)
	c := b.missingAsListed("feeds", "every day of old published")
	require.Zero(t, c.Late)

	b.addTo("feeds", "customer", "", "new")
	c = b.missingAsListed("feeds", "new added today")
	require.Zero(t, c.Missing, "today is not due yet")
	require.Zero(t, c.Late)
	b.clock.Advance(24 * time.Hour)
	c = b.missingAsListed("feeds", "a day later")
	require.Equal(t, 2, c.Missing)
	require.Equal(t, "2026-01-01|new", c.OldestMissing)
	require.Equal(t, 2, c.Late)

	b.addTo("feeds", "customer", "2025-12-01", "back")
	c = b.missingAsListed("feeds", "a backfill of a month")
	require.Equal(t, 2+32, c.Missing)
	require.Equal(t, "2025-12-01|back", c.OldestMissing)
	b.publish("feeds", "2025-12-01|back", "2026-01-01|new")
	c = b.missingAsListed("feeds", "two published")
	require.Equal(t, 32, c.Missing)
	require.Equal(t, "2025-12-02|back", c.OldestMissing)
	require.Equal(t, 32, c.Late)
}

// testDimensionsDynamicRollUp: a roll-up across a DYNAMIC dimension reads,
// for each date, every value expected at that date: a customer added
// today is no input of yesterday's roll-up, and today's waits for it.
func (s *suite) testDimensionsDynamicRollUp(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dateByCustomer("2025-12-30", nil))
	b.definedDataset("global", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.job("roll", "global", "feeds")
	b.addTo("feeds", "customer", "2025-12-30", "acme")
	b.publish("feeds", "2025-12-30|acme", "2025-12-31|acme")
	b.addTo("feeds", "customer", "", "beta")
	b.clock.Advance(24 * time.Hour)
	c, d := b.next("roll")
	require.Equal(t, "2025-12-30", d)
	require.Equal(t, []backends.Read{{Dataset: "feeds", DataID: "2025-12-30|acme"}}, c.Reads)
	b.complete(c)
	require.Equal(t, []string{"2025-12-31"}, b.drain("roll"))
	b.publish("feeds", "2026-01-01|acme")
	bs, err := b.s.Blockers(b.ctx, "roll", "2026-01-01")
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, []string{"feeds", "2026-01-01|beta", string(backends.BlockerInputNotReady)}, []string{bs[0].Dataset, bs[0].DataID, string(bs[0].Kind)})
	b.publish("feeds", "2026-01-01|beta")
	c, d = b.next("roll")
	require.Equal(t, "2026-01-01", d)
	require.Equal(t, []backends.Read{{Dataset: "feeds", DataID: "2026-01-01|acme"}, {Dataset: "feeds", DataID: "2026-01-01|beta"}}, c.Reads)
	b.complete(c)

	// An add that would make a roll-up read more than it may (10,000
	// chunks, or fewer where the store's transactions hold fewer) is
	// refused, naming the job.
	b.definedDataset("wide", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-30"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"r1", "r2", "r3", "r4"}}),
		dimension("customer", partition.Def{Kind: partition.Dynamic})))
	b.definedDataset("wide-global", partition.Def{Kind: partition.Daily, Start: "2025-12-30"})
	b.job("wide-roll", "wide-global", "wide")
	values := make([]string, partition.MaxMapped/4+1)
	for i := range values {
		values[i] = fmt.Sprintf("c%05d", i)
	}
	_, err = b.s.AddPartitions(b.ctx, "wide", values, "customer", "")
	requireCode(t, err, backends.CodeInvalidArgument, "4 regions x 2,501 customers")
	require.Contains(t, err.Error(), "wide-roll")
	require.Empty(t, b.membersOf("wide", "customer"))
	b.addTo("wide", "customer", "", values[:100]...)
}

// testDimensionsDynamicRace: runners race findNext over a date × customer
// root job and a job reading it by customer while customers are added,
// some of them with a backfill: every tuple expected in the end is claimed
// exactly once by each job.
func (s *suite) testDimensionsDynamicRace(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-01", End: "2025-12-31"}),
		dimension("customer", partition.Def{Kind: partition.Dynamic})))
	b.definedDataset("mart", dimensionsDef(0, nil, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-01", End: "2025-12-31"}),
		dimension("customer", partition.Def{Kind: partition.Dynamic})))
	b.job("ingest", "feeds")
	b.job("build", "mart", "feeds")
	// Customer i is expected from December (1 + 3i) on; the clock stands
	// in January, so every date of the definition is due.
	const customers = 8
	var want []string
	for d := 1; d <= 31; d++ {
		for i := range customers {
			if d >= 1+3*i {
				want = append(want, fmt.Sprintf("2025-12-%02d|c%d", d, i))
			}
		}
	}
	slices.SortFunc(want, backends.CompareDataID)
	type claim struct{ job, dataid string }
	var mu sync.Mutex
	var claims []claim
	errs := make(chan error, s.cfg.workers+1)
	var wg sync.WaitGroup
	added := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(added)
		for i := range customers {
			if _, err := b.s.AddPartitions(b.ctx, "feeds", []string{fmt.Sprintf("c%d", i)}, "customer", fmt.Sprintf("2025-12-%02d", 1+3*i)); err != nil {
				errs <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for w := range s.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs := []string{"ingest", "build"}
			for idle := 0; ; {
				c, err := b.s.FindNext(b.ctx, jobs[(w+idle)%2], executor)
				if err != nil {
					errs <- err
					return
				}
				if c == nil {
					select {
					case <-added:
						if idle++; idle >= 4 {
							return
						}
					default:
						time.Sleep(time.Millisecond)
					}
					continue
				}
				idle = 0
				mu.Lock()
				claims = append(claims, claim{c.Job, c.DataID})
				mu.Unlock()
				if err := b.s.Complete(b.ctx, c.Token); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, job := range []string{"ingest", "build"} {
		for c, _ := b.next(job); c != nil; c, _ = b.next(job) {
			claims = append(claims, claim{job, c.DataID})
			b.complete(c)
		}
	}
	got := map[string][]string{}
	for _, c := range claims {
		got[c.job] = append(got[c.job], c.dataid)
	}
	for _, job := range []string{"ingest", "build"} {
		slices.SortFunc(got[job], backends.CompareDataID)
		require.Equal(t, want, got[job], "%s claims every tuple exactly once", job)
	}
	require.Equal(t, want, b.partitionIDs(backends.PartitionFilter{Dataset: "mart", First: backends.MaxPageSize}))
}

var valueCountTests = []testCase{
	{"DimensionsValueCounts", (*suite).testDimensionsValueCounts},
	{"DimensionsValueCountsDynamic", (*suite).testDimensionsValueCountsDynamic},
}

// valueCounts lists every value's counts of dimension dim, "value
// missing/late oldestMissing oldestLate", a page of n at a time.
func (b *bundle) valueCounts(dataset, dim string, behind bool, n int) ([]string, backends.ValueCountPage) {
	b.t.Helper()
	var out []string
	f := backends.ValueCountFilter{Dataset: dataset, Dimension: dim, Behind: behind, First: n}
	var first backends.ValueCountPage
	for k := 0; ; k++ {
		page, err := b.s.ValueCounts(b.ctx, f)
		require.NoError(b.t, err)
		if k == 0 {
			first = page
		}
		for _, c := range page.Counts {
			out = append(out, fmt.Sprintf("%s %d/%d %s %s", c.Value, c.Missing, c.Late, c.OldestMissing, c.OldestLate))
		}
		if !page.HasNextPage {
			return out, first
		}
		require.NotEmpty(b.t, page.Counts)
		f.After = page.Counts[len(page.Counts)-1].Value
	}
}

// listedCounts is valueCounts worked out from the partitions listing of
// each value's slice.
func (b *bundle) listedCounts(dataset, dim string, values ...string) []string {
	b.t.Helper()
	var out []string
	for _, v := range values {
		missing, late, oldestMissing, oldestLate := 0, 0, "", ""
		for _, p := range b.partitions(backends.PartitionFilter{Dataset: dataset, First: backends.MaxPageSize, Slice: []partition.Slice{{Dimension: dim, Values: []string{v}}}}) {
			if p.Status == backends.StatusNone {
				if missing++; oldestMissing == "" {
					oldestMissing = p.DataID
				}
			}
			if p.Late {
				if late++; oldestLate == "" {
					oldestLate = p.DataID
				}
			}
		}
		out = append(out, fmt.Sprintf("%s %d/%d %s %s", v, missing, late, oldestMissing, oldestLate))
	}
	return out
}

// testDimensionsValueCounts: the missing and late chunks of a date ×
// region dataset by region: a gap in one region, a feed stopped in
// another, none in the third, in shortlex order of the regions, page by
// page, behind ones only when asked; they agree with each region's
// partitions listing. A held chunk is late, not missing.
func (s *suite) testDimensionsValueCounts(t *testing.T) {
	b := s.setup(t)
	deadline := 2 * time.Hour
	def := dimensionsDef(0, &deadline, dimension("date", partition.Def{Kind: partition.Daily, Start: "2025-12-01"}),
		dimension("region", partition.Def{Kind: partition.Static, Values: []string{"us", "apac", "eu"}}))
	b.definedDataset("feeds", def)
	b.clock.Advance(3 * time.Hour) // 2025-12-31 is late
	_, err := b.s.PublishRange(b.ctx, "feeds", "2025-12-01", "2025-12-09")
	require.NoError(t, err)
	_, err = b.s.PublishRange(b.ctx, "feeds", "2025-12-11", "2025-12-19")
	require.NoError(t, err)
	b.publish("feeds", "2025-12-10|us", "2025-12-10|apac")
	for _, r := range []struct{ from, to, region string }{{"2025-12-20", "2025-12-31", "us"}, {"2025-12-20", "2025-12-31", "eu"}} {
		_, err := b.s.SlicedRange(b.ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "feeds", From: r.from, To: r.to, Slice: []partition.Slice{{Dimension: "region", Values: []string{r.region}}}})
		require.NoError(t, err)
	}
	b.datasets("scratch")

	want := []string{"eu 1/1 2025-12-10|eu 2025-12-10|eu", "us 0/0  ", "apac 12/12 2025-12-20|apac 2025-12-20|apac"}
	require.Equal(t, want, b.listedCounts("feeds", "region", "eu", "us", "apac"), "the listing")
	got, page := b.valueCounts("feeds", "region", false, 0)
	require.Equal(t, want, got)
	require.Equal(t, 3, page.Values)
	require.Equal(t, 2, page.Behind)
	got, _ = b.valueCounts("feeds", "region", false, 1)
	require.Equal(t, want, got, "a page of one at a time")
	got, _ = b.valueCounts("feeds", "region", true, 1)
	require.Equal(t, []string{want[0], want[2]}, got, "behind only")

	// A gap in the middle of us's history.
	b.definedDataset("gaps", def)
	_, err = b.s.SlicedRange(b.ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "gaps", From: "2025-12-01", To: "2025-12-31", Slice: []partition.Slice{{Dimension: "region", Values: []string{"us", "apac"}}}})
	require.NoError(t, err)
	_, err = b.s.SlicedRange(b.ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "gaps", From: "2025-12-01", To: "2025-12-14", Slice: []partition.Slice{{Dimension: "region", Values: []string{"eu"}}}})
	require.NoError(t, err)
	_, err = b.s.SlicedRange(b.ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: "gaps", From: "2025-12-16", To: "2025-12-31", Slice: []partition.Slice{{Dimension: "region", Values: []string{"eu"}}}})
	require.NoError(t, err)
	got, page = b.valueCounts("gaps", "region", false, 0)
	require.Equal(t, b.listedCounts("gaps", "region", "eu", "us", "apac"), got)
	require.Equal(t, "eu 1/1 2025-12-15|eu 2025-12-15|eu", got[0])
	require.Equal(t, 1, page.Behind)
	_, err = b.s.Hold(b.ctx, "gaps", "2025-12-20|us", "bad file")
	require.NoError(t, err)
	got, _ = b.valueCounts("gaps", "region", false, 0)
	require.Equal(t, b.listedCounts("gaps", "region", "eu", "us", "apac"), got)
	require.Equal(t, "us 0/1  2025-12-20|us", got[1])

	for _, c := range []struct{ dataset, dim, want string }{
		{"feeds", "date", "STATIC and DYNAMIC dimensions"},
		{"feeds", "zone", "no dimension \"zone\""},
		{"scratch", "region", "has no partition definition"},
	} {
		_, err := b.s.ValueCounts(b.ctx, backends.ValueCountFilter{Dataset: c.dataset, Dimension: c.dim})
		requireCode(t, err, backends.CodeInvalidArgument, "%+v", c)
		require.Contains(t, err.Error(), c.want)
	}
}

// testDimensionsValueCountsDynamic: by customer of a DYNAMIC dimension,
// each counted from its own start; a customer added today is behind in
// nothing; after a remove (whose chunks stay) the values left are
// counted by reading their chunks, and still agree with the listing.
func (s *suite) testDimensionsValueCountsDynamic(t *testing.T) {
	b := s.setup(t)
	deadline := 2 * time.Hour
	b.definedDataset("orders", dateByCustomer("2025-12-01", &deadline))
	b.clock.Advance(3 * time.Hour)
	b.addTo("orders", "customer", "2025-12-01", "acme")
	b.addTo("orders", "customer", "2025-12-25", "beta")
	b.addTo("orders", "customer", "", "new")
	_, err := b.s.PublishRange(b.ctx, "orders", "2025-12-01", "2025-12-27")
	require.NoError(t, err)
	want := []string{"new 0/0  ", "acme 4/4 2025-12-28|acme 2025-12-28|acme", "beta 4/4 2025-12-28|beta 2025-12-28|beta"}
	require.Equal(t, want, b.listedCounts("orders", "customer", "new", "acme", "beta"))
	got, page := b.valueCounts("orders", "customer", false, 0)
	require.Equal(t, want, got)
	require.Equal(t, 2, page.Behind)
	c, err := b.s.ValueCounts(b.ctx, backends.ValueCountFilter{Dataset: "orders", Dimension: "customer", First: 1})
	require.NoError(t, err)
	require.Equal(t, "2026-01-01", c.Counts[0].ExpectedFrom, "new is expected from today's window, not due yet")

	_, err = b.s.RemovePartitions(b.ctx, "orders", []string{"beta"}, "customer")
	require.NoError(t, err)
	got, page = b.valueCounts("orders", "customer", false, 0)
	require.Equal(t, want[:2], got)
	require.Equal(t, -1, page.Behind, "counted by reading the values listed")
	require.Equal(t, 2, page.Values)
}
