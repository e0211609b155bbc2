package backendtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Dynamic partitions (SPEC §10, first bullet): a DYNAMIC definition's
// expected dataids are a set kept in the store, changed by addPartitions
// and removePartitions; a job without inputs producing the dataset claims
// each added value once, lowest first among the due ones, from its adding
// + lag; a value is late, when not READY, from its adding + deadline.

var dynamicTests = []testCase{
	{"DynamicAddRemove", (*suite).testDynamicAddRemove},
	{"DynamicRootJob", (*suite).testDynamicRootJob},
	{"DynamicValuesBeforeJob", (*suite).testDynamicValuesBeforeJob},
	{"DynamicMissingLate", (*suite).testDynamicMissingLate},
	{"DynamicRanges", (*suite).testDynamicRanges},
	{"DynamicRuns", (*suite).testDynamicRuns},
}

// dynamicDef is a DYNAMIC definition with lag and, when not zero, a
// deadline.
func dynamicDef(lag, deadline time.Duration) partition.Def {
	d := partition.Def{Kind: partition.Dynamic, Lag: lag}
	if deadline > 0 {
		d.Deadline = &deadline
	}
	return d
}

// addValues adds values and returns the result.
func (b *bundle) addValues(dataset string, values ...string) backends.RangeResult {
	b.t.Helper()
	res, err := b.s.AddPartitions(b.ctx, dataset, values, "", "")
	require.NoError(b.t, err, "addPartitions %s %v", dataset, values)
	return res
}

func (b *bundle) removeValues(dataset string, values ...string) backends.RangeResult {
	b.t.Helper()
	res, err := b.s.RemovePartitions(b.ctx, dataset, values, "")
	require.NoError(b.t, err, "removePartitions %s %v", dataset, values)
	return res
}

// partitionIDs lists the dataids of every partition of dataset.
func (b *bundle) partitionIDs(f backends.PartitionFilter) []string {
	b.t.Helper()
	var ids []string
	for _, p := range b.partitions(f) {
		ids = append(ids, p.DataID)
	}
	return ids
}

func skippedIDs(res backends.RangeResult) []string {
	var ids []string
	for _, s := range res.Skipped {
		ids = append(ids, s.DataID)
	}
	return ids
}

func (s *suite) testDynamicAddRemove(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("files", dynamicDef(0, 0))
	b.definedDataset("days", partition.Def{Kind: partition.Daily, Start: "2026-01-01"})

	require.Empty(t, b.partitionIDs(backends.PartitionFilter{Dataset: "files"}), "a new set is empty")
	res := b.addValues("files", "b", "a", "10", "a")
	require.Equal(t, 3, res.Changed)
	require.Equal(t, []string{"a"}, skippedIDs(res), "a value listed twice is added once")
	res = b.addValues("files", "a", "c")
	require.Equal(t, 1, res.Changed)
	require.Equal(t, []string{"a"}, skippedIDs(res), "an existing value is skipped")
	require.Contains(t, res.Skipped[0].Reason, "already")
	// Shortlex: shorter first.
	require.Equal(t, []string{"a", "b", "c", "10"}, b.partitionIDs(backends.PartitionFilter{Dataset: "files"}))
	require.Equal(t, []string{"b", "c"}, b.partitionIDs(backends.PartitionFilter{Dataset: "files", From: "b", To: "c"}))
	// Paging by one: every value once, in order.
	require.Equal(t, []string{"a", "b", "c", "10"}, b.partitionIDs(backends.PartitionFilter{Dataset: "files", First: 1}))

	// A source's chunks are the set's values.
	_, err := b.s.Publish(b.ctx, "files", "zz")
	requireCode(t, err, backends.CodeInvalidArgument, "publish of a value not in the set")
	b.publish("files", "a")
	parts := b.partitions(backends.PartitionFilter{Dataset: "files"})
	require.Equal(t, backends.StatusReady, parts[0].Status)
	require.Equal(t, backends.StatusNone, parts[1].Status)

	// Removing keeps the chunks.
	res = b.removeValues("files", "a", "nope")
	require.Equal(t, 1, res.Changed)
	require.Equal(t, []string{"nope"}, skippedIDs(res))
	require.Equal(t, []string{"b", "c", "10"}, b.partitionIDs(backends.PartitionFilter{Dataset: "files"}))
	require.Equal(t, backends.StatusReady, b.status("files", "a"), "removing a value never deletes its chunk")
	_, err = b.s.Publish(b.ctx, "files", "a")
	requireCode(t, err, backends.CodeInvalidArgument, "publish of a removed value")

	// Upserting the dataset again (apply) keeps the values: they are data.
	b.definedDataset("files", dynamicDef(time.Minute, 0))
	require.Equal(t, []string{"b", "c", "10"}, b.partitionIDs(backends.PartitionFilter{Dataset: "files"}))

	// Every add and remove is a catalog change of the dataset.
	page, err := b.s.CatalogChanges(b.ctx, backends.ChangeFilter{Dataset: "files", First: 10})
	require.NoError(t, err)
	var ops []string
	for _, c := range page.Changes {
		ops = append(ops, c.Op)
	}
	require.Equal(t, []string{"upsertDataset", "removePartitions", "addPartitions", "addPartitions", "upsertDataset"}, ops)
	require.Contains(t, string(page.Changes[1].Before), `"removed":["a"]`)
	require.Contains(t, string(page.Changes[2].Before), `"added":["c"]`)

	// A change lists the first 20 values it made and counts them all: an
	// add of 10,000 values stays a small change.
	few := make([]string, 45)
	for i := range few {
		few[i] = fmt.Sprintf("m%02d", i)
	}
	res = b.addValues("files", few...)
	require.Equal(t, 45, res.Changed)
	page, err = b.s.CatalogChanges(b.ctx, backends.ChangeFilter{Dataset: "files", First: 10})
	require.NoError(t, err)
	counted := 0 // a backend may commit a call in several transactions, a change each
	for _, c := range page.Changes {
		if counted == len(few) {
			break
		}
		require.Equal(t, "addPartitions", c.Op)
		var rec struct {
			Added []string
			Count int
		}
		require.NoError(t, json.Unmarshal(c.Before, &rec))
		require.Len(t, rec.Added, min(rec.Count, 20), "%s", c.Before)
		counted += rec.Count
	}
	require.Equal(t, len(few), counted)
	b.removeValues("files", few...)

	// Refusals change nothing.
	_, err = b.s.AddPartitions(b.ctx, "days", []string{"x"}, "", "")
	requireCode(t, err, backends.CodeInvalidArgument, "add to a DAILY dataset")
	_, err = b.s.AddPartitions(b.ctx, "nope", []string{"x"}, "", "")
	requireCode(t, err, backends.CodeNotFound, "add to an unknown dataset")
	_, err = b.s.AddPartitions(b.ctx, "files", []string{"x"}, "region", "")
	requireCode(t, err, backends.CodeInvalidArgument, "a dimension of a one-dimensional dataset")
	_, err = b.s.AddPartitions(b.ctx, "files", []string{"x"}, "", "2026-01-01")
	requireCode(t, err, backends.CodeInvalidArgument, "from for a one-dimensional dataset")
	_, err = b.s.AddPartitions(b.ctx, "files", []string{"x", "a b"}, "", "")
	requireCode(t, err, backends.CodeInvalidArgument, "an invalid dataid")
	many := make([]string, backends.MaxPartitionValues+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	_, err = b.s.AddPartitions(b.ctx, "files", many, "", "")
	requireCode(t, err, backends.CodeInvalidArgument, "more than %d values", backends.MaxPartitionValues)
	_, err = b.s.RemovePartitions(b.ctx, "files", many, "")
	requireCode(t, err, backends.CodeInvalidArgument, "more than %d values", backends.MaxPartitionValues)
	require.Equal(t, []string{"b", "c", "10"}, b.partitionIDs(backends.PartitionFilter{Dataset: "files"}))
	// The most a call takes, in one call.
	res = b.addValues("files", many[:backends.MaxPartitionValues]...)
	require.Equal(t, backends.MaxPartitionValues-1, res.Changed, "10 was there")
	require.Equal(t, []string{"10"}, skippedIDs(res))
	page2, err := b.s.Partitions(b.ctx, backends.PartitionFilter{Dataset: "files", From: "9990", First: 5})
	require.NoError(t, err)
	require.Len(t, page2.Partitions, 5)
	require.Equal(t, "9990", page2.Partitions[0].DataID)
	require.True(t, page2.HasNextPage)

	// Deleting the dataset drops its set, when asked to: values are data,
	// as chunks are, even where no chunk was made.
	b.definedDataset("values-only", dynamicDef(0, 0))
	b.addValues("values-only", "x")
	err = b.s.DeleteDataset(b.ctx, "values-only", false)
	requireCode(t, err, backends.CodeInvalidArgument, "a dataset with values, without deleteChunks")
	require.Contains(t, err.Error(), "deleteChunks")
	require.Equal(t, []string{"x"}, b.partitionIDs(backends.PartitionFilter{Dataset: "values-only"}), "refused: nothing deleted")
	require.NoError(t, b.s.DeleteDataset(b.ctx, "values-only", true))
	b.definedDataset("empty-set", dynamicDef(0, 0))
	require.NoError(t, b.s.DeleteDataset(b.ctx, "empty-set", false), "an empty set needs no deleteChunks")
	require.NoError(t, b.s.DeleteDataset(b.ctx, "files", true))
	b.definedDataset("files", dynamicDef(0, 0))
	require.Empty(t, b.partitionIDs(backends.PartitionFilter{Dataset: "files"}), "a dataset declared again starts with an empty set")
}

// testDynamicValuesBeforeJob: values added before the root job exists, or
// while the job of its id is deleted, are claimed once the job is declared,
// each once, lowest first, due at their adding + lag; those with a chunk
// are not claimed again.
func (s *suite) testDynamicValuesBeforeJob(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("files", dynamicDef(10*time.Minute, 0))
	b.addValues("files", "b", "a", "c")
	_, err := b.s.Publish(b.ctx, "files", "c") // c has its chunk already
	require.NoError(t, err)
	b.job("ingest", "files")
	_, d := b.next("ingest")
	require.Empty(t, d, "a value is due at its adding + lag")
	b.clock.Advance(10 * time.Minute)
	require.Equal(t, []string{"a", "b"}, b.drain("ingest"), "each value added before the job once, lowest first")

	require.NoError(t, b.s.DeleteJob(b.ctx, "ingest"))
	b.addValues("files", "e", "d")
	b.job("ingest", "files")
	b.clock.Advance(10 * time.Minute)
	require.Equal(t, []string{"d", "e"}, b.drain("ingest"), "values added while the job was deleted")
	require.Empty(t, b.drain("ingest"))
}

func (s *suite) testDynamicRootJob(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("files", dynamicDef(10*time.Minute, 0))
	b.job("ingest", "files")

	_, d := b.next("ingest")
	require.Empty(t, d, "nothing is added yet")
	_, err := b.s.Claim(b.ctx, "ingest", "x", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "files", "x", time.Time{})

	b.addValues("files", "b", "a")
	_, d = b.next("ingest")
	require.Empty(t, d, "a value is due at its adding + lag")
	_, err = b.s.Claim(b.ctx, "ingest", "a", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "files", "a", epoch.Add(10*time.Minute))
	bs, err := b.s.Blockers(b.ctx, "ingest", "a")
	require.NoError(t, err)
	blockerUntil(t, bs, backends.BlockerNotDue, "files", "a", epoch.Add(10*time.Minute))

	b.clock.Advance(10 * time.Minute)
	require.Equal(t, []string{"a", "b"}, b.drain("ingest"), "each value once, lowest first")
	require.Empty(t, b.drain("ingest"))

	// Added again: skipped, not claimed again. A new value lower than
	// those claimed is claimed once due; one removed before it is due
	// never is.
	b.addValues("files", "a", "0", "d")
	b.removeValues("files", "d")
	b.clock.Advance(9 * time.Minute)
	require.Empty(t, b.drain("ingest"))
	b.clock.Advance(time.Minute)
	require.Equal(t, []string{"0"}, b.drain("ingest"))
	_, err = b.s.Claim(b.ctx, "ingest", "d", executor)
	lockedUntil(t, err, backends.BlockerNotDue, "files", "d", time.Time{})

	// A failed value is retried; a resubmitted one re-runs; removing a
	// value stops its retries.
	b.addValues("files", "e", "f")
	b.clock.Advance(10 * time.Minute)
	c, d := b.next("ingest")
	require.Equal(t, "e", d)
	b.fail(c, "bad file")
	_, err = b.s.Resubmit(b.ctx, "files", "a", false)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "e", "f"}, b.drain("ingest"), "RESUBMIT first, then the lowest")
	c, d = b.next("ingest")
	require.Nil(t, c, "got %s", d)
	_, err = b.s.Resubmit(b.ctx, "files", "b", false)
	require.NoError(t, err)
	b.removeValues("files", "b")
	require.Empty(t, b.drain("ingest"), "a removed value is not claimed")
	require.Equal(t, backends.StatusResubmit, b.status("files", "b"), "its chunk stays")
	// Force is the operator's override, as for any definition.
	b.complete(b.force("ingest", "b"))

	// The values the job produced are the set's, READY.
	parts := b.partitions(backends.PartitionFilter{Dataset: "files"})
	var got []string
	for _, p := range parts {
		got = append(got, p.DataID+"="+string(p.Status))
	}
	require.Equal(t, []string{"0=READY", "a=READY", "e=READY", "f=READY"}, got)
}

func (s *suite) testDynamicMissingLate(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("feeds", dynamicDef(10*time.Minute, time.Hour))

	b.addValues("feeds", "acme", "zeta")
	b.clock.Advance(30 * time.Minute)
	b.addValues("feeds", "beta")
	parts := b.partitions(backends.PartitionFilter{Dataset: "feeds"})
	require.Len(t, parts, 3)
	require.Equal(t, "acme", parts[0].DataID)
	require.Equal(t, epoch.Add(10*time.Minute), parts[0].DueAt.UTC(), "due at adding + lag")
	require.Equal(t, "beta", parts[1].DataID)
	require.Equal(t, epoch.Add(40*time.Minute), parts[1].DueAt.UTC())
	require.True(t, parts[0].WindowStart.IsZero(), "a dynamic value has no window")
	c, err := b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, 2, c.Missing, "acme and zeta are due, beta is not")
	require.Equal(t, "acme", c.OldestMissing)
	require.Zero(t, c.Late)

	b.publish("feeds", "zeta")
	b.clock.Advance(30 * time.Minute) // 01:00: acme is late, beta is not yet
	late := true
	parts = b.partitions(backends.PartitionFilter{Dataset: "feeds", Late: &late})
	require.Len(t, parts, 1)
	require.Equal(t, "acme", parts[0].DataID)
	none := backends.StatusNone
	require.Equal(t, []string{"acme", "beta"}, b.partitionIDs(backends.PartitionFilter{Dataset: "feeds", Status: &none}))
	c, err = b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, backends.PartitionCount{Dataset: "feeds", At: c.At, Missing: 2, Late: 1, OldestMissing: "acme", OldestLate: "acme"}, c)

	b.clock.Advance(30 * time.Minute) // beta added 01:00 ago: late too
	c, err = b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, 2, c.Late)
	b.removeValues("feeds", "acme")
	c, err = b.s.PartitionCounts(b.ctx, "feeds")
	require.NoError(t, err)
	require.Equal(t, 1, c.Late, "a removed value is no longer expected")
	require.Equal(t, "beta", c.OldestLate)
}

func (s *suite) testDynamicRanges(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("files", dynamicDef(0, 0))
	b.addValues("files", "a", "b", "c", "10")
	res, err := b.s.PublishRange(b.ctx, "files", "b", "10")
	require.NoError(t, err)
	require.Equal(t, 3, res.Changed, "the values in [b, 10]")
	require.Equal(t, backends.StatusNone, b.status("files", "a"))
	b.removeValues("files", "c")
	res, err = b.s.HoldRange(b.ctx, "files", "a", "10", "check")
	require.NoError(t, err)
	require.Equal(t, 3, res.Changed, "a, b and 10: c is no longer a value")
	require.Equal(t, backends.StatusReady, b.status("files", "c"))
}

// testDynamicRace: 32 runners race findNext over a dynamic dataset while
// a sensor adds values in batches (one batch at a time, some of them
// again): every value is claimed exactly once, nothing else is claimed.
func (s *suite) testDynamicRace(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("files", dynamicDef(0, 0))
	b.job("ingest", "files")
	const batches, per = 20, 25
	var want []string
	for i := range batches * per {
		want = append(want, fmt.Sprintf("f%04d", i))
	}
	done := make(chan struct{})
	errs := make(chan error, s.cfg.workers+1)
	claimed := make(chan string, len(want)*2)
	go func() {
		defer close(done)
		for i := range batches {
			// Every batch repeats the last value of the one before.
			vals := want[max(0, i*per-1) : (i+1)*per]
			if _, err := b.s.AddPartitions(b.ctx, "files", vals, "", ""); err != nil {
				errs <- err
				return
			}
		}
	}()
	workers := make(chan struct{}, s.cfg.workers)
	for range s.cfg.workers {
		go func() {
			defer func() { workers <- struct{}{} }()
			idle := 0
			for idle < 2 {
				finished := false
				select {
				case <-done:
					finished = true
				default:
				}
				c, err := b.s.FindNext(b.ctx, "ingest", executor)
				if err != nil {
					errs <- err
					return
				}
				if c == nil {
					if finished {
						idle++ // two empty rounds begun after the sensor finished
					}
					continue
				}
				claimed <- c.DataID
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
	close(claimed)
	var got []string
	for d := range claimed {
		got = append(got, d)
	}
	slices.Sort(got)
	require.Equal(t, strings.Join(want, " "), strings.Join(got, " "), "every value claimed exactly once")
}

// testDynamicRuns: the runs of a DYNAMIC dataset (the dashboard's grid)
// are those of its chunks, as for a dataset without a definition.
func (s *suite) testDynamicRuns(t *testing.T) {
	b := s.setup(t)
	b.definedDataset("files", dynamicDef(0, 0))
	b.addValues("files", "a", "b", "c")
	b.publish("files", "a", "b")
	span, err := b.s.PartitionRuns(b.ctx, backends.RunsFilter{Dataset: "files"})
	require.NoError(t, err)
	require.Equal(t, 2, span.Count, "the two chunks: %+v", span.Runs)
	require.Equal(t, "a", span.From)
	require.Equal(t, "b", span.To)
}
