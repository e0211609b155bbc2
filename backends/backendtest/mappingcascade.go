package backendtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// The mapping tests of invalidation: resubmit with cascade, force and
// resubmitRange through mapped reads.

// cascadePipeline defines raw (daily source) -> roll (7-day lookback) ->
// roll7 -> rep (one to one) -> rep; raw -> weekly (roll-up) -> week ->
// wrep (one to one) -> wrep; roll7 -> wroll (roll-up) -> wroll; and runs
// everything for January 2025 (weeks 2025-W01 to W05; 2025-W01 starts on
// 2024-12-30, before raw's first day).
func (b *bundle) cascadePipeline() {
	b.t.Helper()
	b.mappedDatasets()
	b.definedDataset("rep", dailyDef)
	b.definedDataset("wrep", weeklyDef)
	b.definedDataset("wroll", weeklyDef)
	b.lookbackJob()
	week := []backends.InputMapping{mapping("raw", partition.TimeWindow, 0, 0)}
	b.upsertJob(backends.Job{ID: "weekly", Output: "week", Inputs: []string{"raw"}, InputMappings: week})
	b.job("jrep", "rep", "roll7")
	b.job("jwrep", "wrep", "week")
	b.upsertJob(backends.Job{ID: "jwroll", Output: "wroll", Inputs: []string{"roll7"},
		InputMappings: []backends.InputMapping{mapping("roll7", partition.TimeWindow, 0, 0)}})
	b.publish("raw", dayRange("2025-01-01", "2025-02-02")...)
	for _, j := range []string{"roll", "weekly", "jrep", "jwrep", "jwroll"} {
		require.NotEmpty(b.t, b.drain(j), j)
	}
	require.Equal(b.t, backends.StatusReady, b.status("wroll", "2025-W05"))
}

// changedChunks names the chunks of rows as dataset/dataid.
func changedChunks(rows []backends.StatusRow) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Dataset+"/"+r.DataID)
	}
	slices.Sort(out)
	return out
}

func chunkNames(dataset string, ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = dataset + "/" + id
	}
	return out
}

// testMappingCascade: a cascade from one daily chunk reaches exactly the
// seven rolling outputs and the one weekly output that read it, and what
// was computed from them; publishing the chunk again re-runs exactly
// those, in order.
func (s *suite) testMappingCascade(t *testing.T) {
	b := s.setup(t)
	b.cascadePipeline()
	changed, err := b.s.Resubmit(b.ctx, "raw", "2025-01-15", true)
	require.NoError(t, err)
	var want []string
	want = append(want, "raw/2025-01-15")
	want = append(want, chunkNames("roll7", dayRange("2025-01-15", "2025-01-21")...)...)
	want = append(want, chunkNames("rep", dayRange("2025-01-15", "2025-01-21")...)...)
	want = append(want, "week/2025-W03", "wrep/2025-W03", "wroll/2025-W03", "wroll/2025-W04")
	slices.Sort(want)
	require.Equal(t, want, changedChunks(changed))
	for _, d := range dayRange("2025-01-15", "2025-01-21") {
		require.Equal(t, backends.StatusResubmit, b.status("roll7", d))
		require.Equal(t, backends.StatusError, b.readStatus("raw", "2025-01-15", "roll", d), "raw/2025-01-15 read for %s", d)
	}
	require.Equal(t, backends.StatusError, b.readStatus("raw", "2025-01-15", "weekly", "2025-W03"))
	for _, d := range []string{"2025-01-14", "2025-01-22"} {
		require.Equal(t, backends.StatusReady, b.status("roll7", d))
		require.Equal(t, backends.StatusReady, b.status("rep", d))
	}
	require.Equal(t, backends.StatusDone, b.readStatus("raw", "2025-01-16", "roll", "2025-01-22"), "a read of another chunk stays")
	for _, w := range []string{"2025-W02", "2025-W05"} {
		require.Equal(t, backends.StatusReady, b.status("week", w))
		require.Equal(t, backends.StatusReady, b.status("wroll", w))
	}
	// Nothing is claimable until the chunk is READY again; then exactly
	// what was invalidated runs again.
	for _, j := range []string{"roll", "weekly", "jrep", "jwrep", "jwroll"} {
		require.Empty(t, b.drain(j), j)
	}
	b.publish("raw", "2025-01-15")
	require.Equal(t, dayRange("2025-01-15", "2025-01-21"), b.drain("roll"))
	require.Equal(t, []string{"2025-W03"}, b.drain("weekly"))
	require.Equal(t, dayRange("2025-01-15", "2025-01-21"), b.drain("jrep"))
	require.Equal(t, []string{"2025-W03"}, b.drain("jwrep"))
	require.Equal(t, []string{"2025-W03", "2025-W04"}, b.drain("jwroll"))
	require.Empty(t, b.snapshot().notReady("roll7", "rep", "week", "wrep", "wroll"))
}

// notReady lists the OUTPUT rows of the datasets that are not READY.
func (sn snapshot) notReady(datasets ...string) []string {
	var out []string
	for _, r := range sn.rows {
		if r.Role == backends.RoleOutput && slices.Contains(datasets, r.Dataset) && r.Status != backends.StatusReady {
			out = append(out, r.Dataset+"/"+r.DataID+" "+string(r.Status))
		}
	}
	return out
}

// testMappingCascadeBlocked: a cascade is refused, changing nothing, while a
// claim reads the chunk for any output, or writes an output it reaches.
func (s *suite) testMappingCascadeBlocked(t *testing.T) {
	b := s.setup(t)
	b.cascadePipeline()
	_, err := b.s.Resubmit(b.ctx, "roll7", "2025-01-20", false)
	require.NoError(t, err)
	c := b.claim("roll", "2025-01-20") // reads raw/2025-01-14..20
	before := b.snapshot()
	_, err = b.s.Resubmit(b.ctx, "raw", "2025-01-15", true)
	requireCode(t, err, backends.CodeLocked)
	var e *backends.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, []mb{{backends.BlockerLocalRead, "raw", "2025-01-15", backends.StatusRunning}}, toMB(e.Blockers))
	require.Equal(t, before.rows, b.snapshot().rows, "a refused cascade changes nothing")
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "raw", "2025-01-15", true)
	require.NoError(t, err)
	require.Equal(t, backends.StatusResubmit, b.status("roll7", "2025-01-20"))
}

// testMappingForceCascade: forcing a chunk invalidates what mapped
// consumers computed from it, in the same transaction.
func (s *suite) testMappingForceCascade(t *testing.T) {
	b := s.setup(t)
	b.cascadePipeline()
	c := b.force("roll", "2025-01-08")
	require.Len(t, c.Reads, 7)
	require.Equal(t, backends.StatusResubmit, b.status("rep", "2025-01-08"))
	require.Equal(t, backends.StatusResubmit, b.status("wroll", "2025-W02"))
	require.Equal(t, backends.StatusError, b.readStatus("roll7", "2025-01-08", "jwroll", "2025-W02"))
	require.Equal(t, backends.StatusReady, b.status("wroll", "2025-W03"))
	require.Equal(t, backends.StatusReady, b.status("rep", "2025-01-09"))
	b.complete(c)
	require.Equal(t, []string{"2025-W02"}, b.drain("jwroll"))
	require.Equal(t, []string{"2025-01-08"}, b.drain("jrep"))
}

// testMappingCascadeRange: resubmitRange with cascade reaches what every
// chunk of the range was read for.
func (s *suite) testMappingCascadeRange(t *testing.T) {
	b := s.setup(t)
	b.cascadePipeline()
	res, err := b.s.ResubmitRange(b.ctx, "raw", "2025-01-19", "2025-01-20", true)
	require.NoError(t, err)
	require.Equal(t, 2, res.Changed)
	require.Empty(t, res.Skipped)
	for _, d := range dayRange("2025-01-19", "2025-01-26") {
		require.Equal(t, backends.StatusResubmit, b.status("roll7", d), d)
	}
	require.Equal(t, backends.StatusReady, b.status("roll7", "2025-01-18"))
	require.Equal(t, backends.StatusResubmit, b.status("week", "2025-W03"))
	require.Equal(t, backends.StatusResubmit, b.status("week", "2025-W04"))
	again, err := b.s.ResubmitRange(b.ctx, "raw", "2025-01-19", "2025-01-20", true)
	require.NoError(t, err)
	require.Equal(t, 0, again.Changed)
	require.Equal(t, 2, again.Unchanged)
}
