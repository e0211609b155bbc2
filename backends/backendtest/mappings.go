package backendtest

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Tests of partition mappings (SPEC §9): how a job's output dataids map to
// the dataids of the inputs it reads.

var mappingTests = []testCase{
	{"MappingsStored", (*suite).testMappingsStored},
	{"MappingsRefused", (*suite).testMappingsRefused},
	{"MappingsDefinitionChange", (*suite).testMappingsDefinitionChange},
	{"MappingLookback", (*suite).testMappingLookback},
	{"MappingLookbackEndings", (*suite).testMappingLookbackEndings},
	{"MappingWeeklyRollUp", (*suite).testMappingWeeklyRollUp},
	{"MappingHourlyFanOut", (*suite).testMappingHourlyFanOut},
	{"MappingLatest", (*suite).testMappingLatest},
	{"MappingAll", (*suite).testMappingAll},
	{"MappingLocks", (*suite).testMappingLocks},
	{"MappingFindNextLookback", (*suite).testMappingFindNextLookback},
	{"MappingFindNextRollUpAndFanOut", (*suite).testMappingFindNextRollUpAndFanOut},
	{"MappingFindNextLatestAndAll", (*suite).testMappingFindNextLatestAndAll},
	{"MappingLatestHistory", (*suite).testMappingLatestHistory},
	{"MappingEventsReadFor", (*suite).testMappingEventsReadFor},
	{"MappingSweepResubmitFirst", (*suite).testMappingSweepResubmitFirst},
	{"MappingBackfill", (*suite).testMappingBackfill},
	{"MappingPublishRange", (*suite).testMappingPublishRange},
	{"MappingCascade", (*suite).testMappingCascade},
	{"MappingCascadeBlocked", (*suite).testMappingCascadeBlocked},
	{"MappingForceCascade", (*suite).testMappingForceCascade},
	{"MappingCascadeRange", (*suite).testMappingCascadeRange},
}

var (
	dailyDef  = partition.Def{Kind: partition.Daily, Start: "2025-01-01"}
	weeklyDef = partition.Def{Kind: partition.Weekly, Start: "2025-W01"}
	hourlyDef = partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00"}
	regions   = partition.Def{Kind: partition.Static, Values: []string{"eu", "us"}}
)

func mapping(dataset string, kind partition.MappingKind, start, end int) backends.InputMapping {
	return backends.InputMapping{Dataset: dataset, Mapping: partition.Mapping{Kind: kind, StartOffset: start, EndOffset: end}}
}

// mappedDatasets defines the datasets of the mapping tests: daily sources
// raw and dim, a static source region, and daily roll7, weekly week and
// hourly hour outputs.
func (b *bundle) mappedDatasets() {
	b.t.Helper()
	b.definedDataset("raw", dailyDef)
	b.definedDataset("dim", dailyDef)
	b.definedDataset("region", regions)
	b.definedDataset("roll7", dailyDef)
	b.definedDataset("week", weeklyDef)
	b.definedDataset("hour", hourlyDef)
}

func (s *suite) testMappingsStored(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	// Given in another order than the inputs, with an empty kind: stored in
	// input order, the kind spelled out.
	stored := b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw", "dim", "region"},
		InputMappings: []backends.InputMapping{
			mapping("region", partition.All, 0, 0),
			mapping("dim", "", 0, 0),
			mapping("raw", partition.TimeWindow, -6, 0),
		}})
	want := []backends.InputMapping{
		mapping("raw", partition.TimeWindow, -6, 0),
		mapping("dim", partition.Identity, 0, 0),
		mapping("region", partition.All, 0, 0),
	}
	require.Equal(t, want, stored.InputMappings)
	got, err := b.s.Job(b.ctx, "roll")
	require.NoError(t, err)
	require.Equal(t, want, got.InputMappings)
	require.Equal(t, partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}, got.Mapping("raw"))
	require.Equal(t, partition.Mapping{Kind: partition.Identity}, got.Mapping("nope"))
	require.True(t, got.Mapped())

	// A job without mappings stores none, and is not mapped.
	plain := b.job("plain", "week")
	require.Empty(t, plain.InputMappings)
	require.NotNil(t, plain.InputMappings)
	require.False(t, plain.Mapped())

	// Replacing the mappings replaces them; none removes them.
	b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"}})
	got, err = b.s.Job(b.ctx, "roll")
	require.NoError(t, err)
	require.Empty(t, got.InputMappings)
	jobs, err := b.s.Jobs(b.ctx)
	require.NoError(t, err)
	for _, j := range jobs {
		require.NotNil(t, j.InputMappings, "job %s", j.ID)
	}
}

func (s *suite) testMappingsRefused(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.datasets("plain")
	for _, tc := range []struct {
		name   string
		job    backends.Job
		detail string
	}{
		{"a dataset that is not an input", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("dim", partition.TimeWindow, 0, 0)}}, "not one of its inputs"},
		{"an input twice", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0), mapping("raw", partition.Identity, 0, 0)}}, "twice"},
		{"an unknown kind", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", "SIDEWAYS", 0, 0)}}, "unknown mapping kind"},
		{"TIME_WINDOW without a time definition on the input", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"plain"},
			InputMappings: []backends.InputMapping{mapping("plain", partition.TimeWindow, -6, 0)}}, "TIME_WINDOW needs time partitions"},
		{"TIME_WINDOW without a time definition on the output", backends.Job{ID: "j", Output: "plain", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, -6, 0)}}, "TIME_WINDOW needs time partitions"},
		{"startOffset after endOffset", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 1, 0)}}, "startOffset 1 is after endOffset 0"},
		{"offsets on LATEST", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.Latest, -1, 0)}}, "TIME_WINDOW mappings only"},
		{"ALL of an unbounded input", backends.Job{ID: "j", Output: "roll7", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.All, 0, 0)}}, "bounded partition definition"},
		{"IDENTITY between kinds", backends.Job{ID: "j", Output: "week", Inputs: []string{"raw"},
			InputMappings: []backends.InputMapping{mapping("raw", partition.Identity, 0, 0)}}, "use TIME_WINDOW"},
	} {
		_, err := b.s.UpsertJob(b.ctx, tc.job)
		requireCode(t, err, backends.CodeInvalidArgument, tc.name)
		require.Contains(t, err.Error(), tc.detail, tc.name)
		_, err = b.s.ValidateJob(b.ctx, tc.job)
		requireCode(t, err, backends.CodeInvalidArgument, tc.name)
		_, err = b.s.Job(b.ctx, "j")
		requireCode(t, err, backends.CodeNotFound, "%s: nothing stored", tc.name)
	}
	// What worked before mappings still works: a job reading a weekly
	// input into a daily output one to one, with no mapping named.
	b.job("j", "roll7", "week")
}

func (s *suite) testMappingsDefinitionChange(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, -6, 0)}})
	// Taking the time definition off either side would leave the lookback
	// meaningless: refused, and the definitions stay.
	for _, id := range []string{"raw", "roll7"} {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: id, Location: "dt={dataid}/"})
		requireCode(t, err, backends.CodeInvalidArgument, id)
		require.Contains(t, err.Error(), `job "roll"`)
		d, err := b.s.Dataset(b.ctx, id)
		require.NoError(t, err)
		require.NotNil(t, d.Partitions, id)
	}
	// Another time definition is fine.
	b.definedDataset("raw", partition.Def{Kind: partition.Daily, Start: "2024-01-01", Timezone: "Europe/Berlin"})
}

// dayRange lists the daily dataids from..to.
func dayRange(from, to string) []string {
	var out []string
	seq, err := dailyDef.Range(from, to)
	if err != nil {
		panic(err)
	}
	for id := range seq {
		out = append(out, id)
	}
	return out
}

func readsOf(dataset string, ids ...string) []backends.Read {
	out := make([]backends.Read, len(ids))
	for i, id := range ids {
		out[i] = backends.Read{Dataset: dataset, DataID: id}
	}
	return out
}

// mb is an expected blocker of a mapped claim: its kind and the chunk it
// names.
type mb struct {
	kind    backends.BlockerKind
	dataset string
	dataid  string
	status  backends.Status
}

func toMB(bs []backends.Blocker) []mb {
	out := make([]mb, 0, len(bs))
	for _, b := range bs {
		out = append(out, mb{b.Kind, b.Dataset, b.DataID, b.Status})
	}
	return sortMB(out)
}

func sortMB(out []mb) []mb {
	out = slices.Clone(out)
	if out == nil {
		out = []mb{}
	}
	slices.SortFunc(out, func(a, b mb) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.dataset, b.dataset), backends.CompareDataID(a.dataid, b.dataid))
	})
	return out
}

// requireMappedBlocked checks that job cannot claim dataid, with exactly
// the given blockers, both from Claim (LOCKED) and from Blockers.
func (b *bundle) requireMappedBlocked(job, dataid string, want ...mb) {
	b.t.Helper()
	_, err := b.s.Claim(b.ctx, job, dataid, executor)
	requireCode(b.t, err, backends.CodeLocked, "claim %s at %s", job, dataid)
	var e *backends.Error
	require.True(b.t, errors.As(err, &e))
	require.Equal(b.t, sortMB(want), toMB(e.Blockers), "claim %s at %s", job, dataid)
	got, err := b.s.Blockers(b.ctx, job, dataid)
	require.NoError(b.t, err)
	require.Equal(b.t, sortMB(want), toMB(got), "blockers of %s at %s", job, dataid)
}

// readRow is job's INPUT row on dataset/dataid read for output dataid
// readFor; nil when there is none.
func (b *bundle) readRow(dataset, dataid, job, readFor string) *backends.StatusRow {
	b.t.Helper()
	want := backends.ReadKey(job, backends.Read{Dataset: dataset, DataID: dataid}, readFor)
	for _, r := range b.chunk(dataset, dataid).Rows {
		if r.RowKey == want {
			return &r
		}
	}
	return nil
}

func (b *bundle) readStatus(dataset, dataid, job, readFor string) backends.Status {
	b.t.Helper()
	if r := b.readRow(dataset, dataid, job, readFor); r != nil {
		return r.Status
	}
	return none
}

// lookbackJob defines roll: raw (daily) -> roll7 (daily), reading the
// seven days up to its own.
func (b *bundle) lookbackJob() {
	b.t.Helper()
	b.upsertJob(backends.Job{ID: "roll", Output: "roll7", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, -6, 0)}})
}

// testMappingLookback: output d waits for inputs d-6..d, and a late input x
// blocks exactly the outputs x..x+6.
func (s *suite) testMappingLookback(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.lookbackJob()
	for _, d := range dayRange("2025-01-01", "2025-01-20") {
		if d != "2025-01-09" {
			b.publish("raw", d)
		}
	}
	for _, d := range dayRange("2025-01-09", "2025-01-15") {
		b.requireMappedBlocked("roll", d, mb{backends.BlockerInputNotReady, "raw", "2025-01-09", none})
	}
	// The first days read the days of the input there are.
	c := b.claim("roll", "2025-01-03")
	require.Equal(t, readsOf("raw", "2025-01-01", "2025-01-02", "2025-01-03"), c.Reads)
	b.complete(c)
	for _, d := range append(dayRange("2025-01-01", "2025-01-08"), dayRange("2025-01-16", "2025-01-20")...) {
		if d == "2025-01-03" {
			continue
		}
		c := b.claim("roll", d)
		from := "2025-01-01"
		if all := dayRange("2025-01-01", d); len(all) > 7 {
			from = all[len(all)-7]
		}
		require.Equal(t, readsOf("raw", dayRange(from, d)...), c.Reads, "reads of %s", d)
		b.complete(c)
	}
	// A day of the input is read once for each output whose window holds it.
	for _, out := range dayRange("2025-01-02", "2025-01-08") {
		require.Equal(t, backends.StatusDone, b.readStatus("raw", "2025-01-02", "roll", out), "raw/2025-01-02 read for %s", out)
	}
	require.Equal(t, none, b.readStatus("raw", "2025-01-02", "roll", "2025-01-09"))
	// The late day arrives: exactly the seven outputs it blocked are claimable.
	b.publish("raw", "2025-01-09")
	for _, d := range dayRange("2025-01-09", "2025-01-15") {
		b.requireBlockers("roll", d)
		c := b.claim("roll", d)
		require.Len(t, c.Reads, 7)
		b.complete(c)
		require.Equal(t, backends.StatusReady, b.status("roll7", d))
	}
	// Never twice for the same output: a READY output is not claimed again,
	// and a resubmitted one re-reads its window.
	want := []mb{{backends.BlockerOutputLocked, "roll7", "2025-01-12", backends.StatusReady}}
	for _, d := range dayRange("2025-01-06", "2025-01-12") {
		want = append(want, mb{backends.BlockerLocalRead, "raw", d, backends.StatusDone})
	}
	b.requireMappedBlocked("roll", "2025-01-12", want...)
	_, err := b.s.Resubmit(b.ctx, "roll7", "2025-01-12", false)
	require.NoError(t, err)
	c = b.claim("roll", "2025-01-12")
	for _, d := range dayRange("2025-01-06", "2025-01-12") {
		require.Equal(t, backends.StatusRunning, b.readStatus("raw", d, "roll", "2025-01-12"))
	}
	b.complete(c)
}

// testMappingLookbackEndings: failing a mapped claim makes each of its reads
// ERROR, releasing it puts them back as they were, and each read is a lock
// of its own: another output reading the same chunk is not affected.
func (s *suite) testMappingLookbackEndings(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.lookbackJob()
	b.publish("raw", dayRange("2025-01-01", "2025-01-10")...)
	b.run("roll", "2025-01-09")
	c := b.claim("roll", "2025-01-10")
	for _, d := range dayRange("2025-01-04", "2025-01-10") {
		require.Equal(t, backends.StatusRunning, b.readStatus("raw", d, "roll", "2025-01-10"))
	}
	// Heartbeat carries the reads too.
	hb, err := b.s.Heartbeat(b.ctx, c.Token)
	require.NoError(t, err)
	require.Equal(t, c.Reads, hb.Reads)
	claims, err := b.s.Claims(b.ctx, "roll")
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.Equal(t, c.Reads, claims[0].Reads)
	b.fail(c, "boom")
	for _, d := range dayRange("2025-01-04", "2025-01-10") {
		require.Equal(t, backends.StatusError, b.readStatus("raw", d, "roll", "2025-01-10"), d)
	}
	for _, d := range dayRange("2025-01-03", "2025-01-09") {
		require.Equal(t, backends.StatusDone, b.readStatus("raw", d, "roll", "2025-01-09"), d)
	}
	c = b.claim("roll", "2025-01-10")
	require.Equal(t, 2, c.Attempt)
	b.release(c)
	for _, d := range dayRange("2025-01-04", "2025-01-10") {
		require.Equal(t, backends.StatusError, b.readStatus("raw", d, "roll", "2025-01-10"), d)
	}
	require.Equal(t, backends.StatusFailed, b.status("roll7", "2025-01-10"))
	// A claim on a chunk with no row before: release deletes its reads.
	c = b.claim("roll", "2025-01-08")
	b.release(c)
	for _, d := range dayRange("2025-01-02", "2025-01-08") {
		require.Equal(t, none, b.readStatus("raw", d, "roll", "2025-01-08"), d)
	}
	require.Equal(t, none, b.status("roll7", "2025-01-08"))
	// The reaper fails an expired mapped claim with its reads.
	c = b.claim("roll", "2025-01-08")
	b.clock.Advance(2 * time.Hour)
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, d := range dayRange("2025-01-02", "2025-01-08") {
		require.Equal(t, backends.StatusError, b.readStatus("raw", d, "roll", "2025-01-08"), d)
	}
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
}

// testMappingWeeklyRollUp: a weekly output reads every day of its ISO week,
// across a year end (2026-W53 runs from 2026-12-28 to 2027-01-03).
func (s *suite) testMappingWeeklyRollUp(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "weekly", Output: "week", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	b.publish("raw", dayRange("2026-12-21", "2027-01-02")...)
	b.run("weekly", "2026-W52")
	b.requireMappedBlocked("weekly", "2026-W53", mb{backends.BlockerInputNotReady, "raw", "2027-01-03", none})
	b.requireMappedBlocked("weekly", "2027-W01",
		mb{backends.BlockerInputNotReady, "raw", "2027-01-04", none}, mb{backends.BlockerInputNotReady, "raw", "2027-01-05", none},
		mb{backends.BlockerInputNotReady, "raw", "2027-01-06", none}, mb{backends.BlockerInputNotReady, "raw", "2027-01-07", none},
		mb{backends.BlockerInputNotReady, "raw", "2027-01-08", none}, mb{backends.BlockerInputNotReady, "raw", "2027-01-09", none},
		mb{backends.BlockerInputNotReady, "raw", "2027-01-10", none})
	b.publish("raw", "2027-01-03")
	c := b.claim("weekly", "2026-W53")
	require.Equal(t, readsOf("raw", dayRange("2026-12-28", "2027-01-03")...), c.Reads)
	b.complete(c)
	for _, d := range dayRange("2026-12-28", "2027-01-03") {
		require.Equal(t, backends.StatusDone, b.readStatus("raw", d, "weekly", "2026-W53"), d)
	}
	require.Equal(t, none, b.readStatus("raw", "2026-12-27", "weekly", "2026-W53"))
	require.Equal(t, backends.StatusDone, b.readStatus("raw", "2026-12-27", "weekly", "2026-W52"))
}

// testMappingHourlyFanOut: every hour of a day reads that day.
func (s *suite) testMappingHourlyFanOut(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "hourly", Output: "hour", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	b.requireMappedBlocked("hourly", "2025-03-01T05", mb{backends.BlockerInputNotReady, "raw", "2025-03-01", none})
	b.publish("raw", "2025-03-01")
	for h := range 24 {
		id := "2025-03-01T" + twoDigits(h)
		c := b.claim("hourly", id)
		require.Equal(t, readsOf("raw", "2025-03-01"), c.Reads)
		b.complete(c)
		require.Equal(t, backends.StatusDone, b.readStatus("raw", "2025-03-01", "hourly", id))
	}
	b.requireMappedBlocked("hourly", "2025-03-02T00", mb{backends.BlockerInputNotReady, "raw", "2025-03-02", none})
}

func twoDigits(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

// testMappingLatest: LATEST reads the newest READY snapshot not after the
// output dataid, chosen when the chunk is claimed, and locks it.
func (s *suite) testMappingLatest(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "enrich", Output: "roll7", Inputs: []string{"raw", "dim"},
		InputMappings: []backends.InputMapping{mapping("dim", partition.Latest, 0, 0)}})
	b.publish("raw", dayRange("2025-02-01", "2025-02-10")...)
	// No snapshot yet: blocked on the newest candidate.
	b.requireMappedBlocked("enrich", "2025-02-05", mb{backends.BlockerInputNotReady, "dim", "2025-02-05", none})
	b.publish("dim", "2025-01-15", "2025-02-03", "2025-02-07")
	c := b.claim("enrich", "2025-02-05")
	require.Equal(t, []backends.Read{{Dataset: "raw", DataID: "2025-02-05"}, {Dataset: "dim", DataID: "2025-02-03"}}, c.Reads)
	require.Equal(t, backends.StatusRunning, b.readStatus("dim", "2025-02-03", "enrich", "2025-02-05"))
	b.complete(c)
	require.Equal(t, backends.StatusDone, b.readStatus("dim", "2025-02-03", "enrich", "2025-02-05"))
	// Its own day when it is there; an older one while the newer is not READY.
	c = b.claim("enrich", "2025-02-07")
	require.Equal(t, backends.Read{Dataset: "dim", DataID: "2025-02-07"}, c.Reads[1])
	b.complete(c)
	_, err := b.s.Resubmit(b.ctx, "dim", "2025-02-03", false)
	require.NoError(t, err)
	c = b.claim("enrich", "2025-02-04")
	require.Equal(t, backends.Read{Dataset: "dim", DataID: "2025-01-15"}, c.Reads[1])
	b.complete(c)
	require.Equal(t, backends.StatusDone, b.readStatus("dim", "2025-01-15", "enrich", "2025-02-04"))
	// Before the first snapshot there is nothing to read.
	b.publish("raw", "2025-01-10")
	b.requireMappedBlocked("enrich", "2025-01-10", mb{backends.BlockerInputNotReady, "dim", "2025-01-10", none})
	// A force that supersedes a live claim after a newer snapshot arrived
	// reads the newer one and gives the older read back: no read lock is
	// left that no claim would ever end.
	c = b.claim("enrich", "2025-02-09") // reads dim/2025-02-07
	require.Equal(t, backends.Read{Dataset: "dim", DataID: "2025-02-07"}, c.Reads[1])
	b.publish("dim", "2025-02-08")
	f := b.force("enrich", "2025-02-09")
	require.Equal(t, backends.Read{Dataset: "dim", DataID: "2025-02-08"}, f.Reads[1])
	require.Equal(t, none, b.readStatus("dim", "2025-02-07", "enrich", "2025-02-09"))
	require.Equal(t, backends.StatusRunning, b.readStatus("dim", "2025-02-08", "enrich", "2025-02-09"))
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	b.complete(f)
	_, err = b.s.Resubmit(b.ctx, "dim", "2025-02-07", true)
	require.NoError(t, err, "nothing reads dim/2025-02-07 any more")
}

// testMappingAll: ALL reads every expected dataid of a bounded input.
func (s *suite) testMappingAll(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.upsertJob(backends.Job{ID: "global", Output: "roll7", Inputs: []string{"raw", "region"},
		InputMappings: []backends.InputMapping{mapping("region", partition.All, 0, 0)}})
	b.publish("raw", "2025-04-01")
	b.publish("region", "eu")
	b.requireMappedBlocked("global", "2025-04-01", mb{backends.BlockerInputNotReady, "region", "us", none})
	b.publish("region", "us")
	c := b.claim("global", "2025-04-01")
	require.Equal(t, []backends.Read{{Dataset: "raw", DataID: "2025-04-01"}, {Dataset: "region", DataID: "eu"}, {Dataset: "region", DataID: "us"}}, c.Reads)
	b.complete(c)
	require.Equal(t, backends.StatusDone, b.readStatus("region", "us", "global", "2025-04-01"))
	require.Equal(t, backends.StatusDone, b.readStatus("raw", "2025-04-01", "global", "2025-04-01"))
}

// testMappingLocks: the derived locks show every mapped read, each with the
// output dataid it is read for.
func (s *suite) testMappingLocks(t *testing.T) {
	b := s.setup(t)
	b.mappedDatasets()
	b.lookbackJob()
	b.publish("raw", dayRange("2025-01-01", "2025-01-03")...)
	b.run("roll", "2025-01-02")
	c := b.claim("roll", "2025-01-03")
	d := b.chunk("raw", "2025-01-02")
	var reads []string
	for _, r := range d.Rows {
		if r.Role == backends.RoleInput {
			reads = append(reads, r.ReadForOf()+"="+string(r.Status))
		}
	}
	require.ElementsMatch(t, []string{"2025-01-02=DONE", "2025-01-03=RUNNING"}, reads)
	locks, err := b.s.Locks(b.ctx, backends.LockFilter{Dataset: "raw", Job: "roll"})
	require.NoError(t, err)
	var got []string
	for _, l := range locks {
		got = append(got, l.DataID+" for "+l.ReadFor+" "+string(l.Kind)+" "+string(l.Status))
	}
	require.ElementsMatch(t, []string{
		"2025-01-01 for 2025-01-02 LOCAL_READ DONE",
		"2025-01-02 for 2025-01-02 LOCAL_READ DONE",
		"2025-01-01 for 2025-01-03 LOCAL_READ RUNNING",
		"2025-01-02 for 2025-01-03 LOCAL_READ RUNNING",
		"2025-01-03 for 2025-01-03 LOCAL_READ RUNNING",
	}, got)
	// Every row is listed once, in (dataset, dataid, role, job, read-for)
	// order, page after page.
	rows := listRows(t, b, backends.ChunkFilter{Dataset: "raw", First: 2})
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.DataID+"/"+string(r.Role)+"/"+r.Job+"/"+r.ReadFor)
	}
	require.Equal(t, []string{
		"2025-01-01/INPUT/roll/2025-01-02", "2025-01-01/INPUT/roll/2025-01-03", "2025-01-01/OUTPUT//",
		"2025-01-02/INPUT/roll/", "2025-01-02/INPUT/roll/2025-01-03", "2025-01-02/OUTPUT//",
		"2025-01-03/INPUT/roll/", "2025-01-03/OUTPUT//",
	}, keys)
	// The lock graph at an output dataid shows the job reading each chunk
	// of its window.
	g, err := b.s.LockGraph(b.ctx, backends.GraphFilter{Job: "roll", DataID: "2025-01-03"})
	require.NoError(t, err)
	var edges []string
	for _, e := range g.Edges {
		if e.From == "job:roll" && e.Kind == backends.EdgeReads && e.To != "dataset:raw" {
			edges = append(edges, e.To+" "+string(e.Status))
		}
	}
	require.Equal(t, []string{"chunk:raw/2025-01-01 RUNNING", "chunk:raw/2025-01-02 RUNNING", "chunk:raw/2025-01-03 RUNNING"}, edges)
	var nodes []string
	for _, n := range g.Nodes {
		if n.Kind == backends.NodeChunk {
			nodes = append(nodes, n.ID+" "+string(n.Status))
		}
	}
	require.ElementsMatch(t, []string{"chunk:raw/2025-01-03 READY", "chunk:roll7/2025-01-03 RUNNING", "chunk:raw/2025-01-01 READY", "chunk:raw/2025-01-02 READY"}, nodes)
	b.complete(c)
	// A graph at a dataid that is not one of a mapped job's output dataids
	// shows no chunk it reads for it.
	b.upsertJob(backends.Job{ID: "weekly", Output: "week", Inputs: []string{"raw"},
		InputMappings: []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}})
	g, err = b.s.LockGraph(b.ctx, backends.GraphFilter{DataID: "2025-01-03"})
	require.NoError(t, err)
	for _, e := range g.Edges {
		require.False(t, e.From == "job:weekly" && e.Kind == backends.EdgeReads && e.To != "dataset:raw", "weekly reads %s for 2025-01-03", e.To)
	}
	g, err = b.s.LockGraph(b.ctx, backends.GraphFilter{Job: "weekly", DataID: "2025-W01"})
	require.NoError(t, err)
	n := 0
	for _, e := range g.Edges {
		if e.From == "job:weekly" && e.Kind == backends.EdgeReads && e.To != "dataset:raw" {
			n++
		}
	}
	require.Equal(t, 5, n, "2025-W01 reads 2025-01-01..05, the days of raw there are")
}
