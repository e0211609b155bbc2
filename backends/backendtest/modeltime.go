package backendtest

import (
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The reference model's reading of backoff (SPEC §3 fail) and schedules
// (SPEC §8), in the same plain style as model.go: a FAILED row records its
// retryAt; a job without inputs whose output has a definition claims, by
// findNext, the expected dataids of its universe whose window is due; a
// dataid outside the definition is INVALID_ARGUMENT for claim, force and
// blockers.

// modelRetryAt is SPEC §3's formula, written out with plain arithmetic:
// fail time + min(retryDelay × 2^(attempt−1), retryMaxDelay).
func modelRetryAt(j *mJob, attempt int, at time.Time) time.Time {
	if j.retryDelay == 0 {
		return time.Time{}
	}
	d := j.retryDelay
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= j.retryMax {
			break
		}
	}
	return at.Add(min(d, j.retryMax))
}

// jobExpects tells whether dataid is an expected dataid of j's output: any
// dataid when it has no definition, else one in the job's universe.
func (m *model) jobExpects(j *mJob, dataid string) bool {
	return j.def == nil || j.dynamic || slices.Contains(j.ids, dataid) // a dynamic set: any value may come
}

// universe is the dataids findNext looks at for j.
func (m *model) universe(j *mJob) []string {
	if j.def != nil && !j.dynamic {
		return j.ids
	}
	return m.dataids
}

// due is when j's window dataid is due: its end + lag, or the zero time
// for a job that is not scheduled.
func (m *model) due(j *mJob, dataid string) time.Time {
	if j.def == nil || len(j.inputs) > 0 || j.dynamic {
		return time.Time{}
	}
	hour, _, _ := strings.Cut(dataid, "|") // a tuple's window is its hour's
	t, err := time.Parse("2006-01-02T15", hour)
	if err != nil {
		panic("model: " + err.Error())
	}
	return t.Add(time.Hour).Add(j.def.Lag) // the model's definitions are hourly in UTC
}

// allBlockers are the blockers of j at dataid, time blockers included,
// as the store lists them.
func (m *model) allBlockers(j *mJob, dataid string) []backends.Blocker {
	bs := append(wantBlockers(dataid, m.blockers(j, dataid)), m.readBlockers(j, dataid)...)
	out := m.status(m.outKey(j.output, dataid))
	at := func(kind backends.BlockerKind, until time.Time) backends.Blocker {
		return backends.Blocker{Dataset: j.output, DataID: dataid, Job: j.id, Kind: kind, Status: out, Until: until}
	}
	if due := m.due(j, dataid); m.now.Before(due) {
		bs = append(bs, at(backends.BlockerNotDue, due))
	}
	if j.dynamic {
		if until, blocked := m.dynamicBlocker(j, dataid); blocked {
			bs = append(bs, at(backends.BlockerNotDue, until))
		}
	}
	if r := m.rows[m.outKey(j.output, dataid)]; r != nil && r.status == failed && m.now.Before(r.retryAt) {
		bs = append(bs, at(backends.BlockerBackoff, r.retryAt))
	}
	return normBlockers(bs)
}

// newChunkByFindNext tells whether findNext may claim j's chunk at dataid
// that has no row: a job with inputs may, a scheduled one may (when it is
// due: allBlockers), another job without inputs claims new chunks by
// dataid only.
func (m *model) newChunkByFindNext(j *mJob, dataid string) bool {
	if j.dynamic {
		_, ok := m.inSet(j, dataid)
		return ok
	}
	return len(j.inputs) > 0 || (j.def != nil && m.jobExpects(j, dataid))
}

// The model's scheduled job: js writes s, hourly from 2025-12-31T22 to
// 2026-01-01T01 (due at 23:00, 00:00 — the suite's epoch —, 01:00 and
// 02:00); the model test moves the clock by hours now and then.
var (
	modelScheduleDef = partition.Def{Kind: partition.Hourly, Start: "2025-12-31T22", End: "2026-01-01T01"}
	modelScheduleIDs = []string{"2025-12-31T22", "2025-12-31T23", "2026-01-01T00", "2026-01-01T01"}
	// modelOutsideID is a dataid of the schedule's kind after its end.
	modelOutsideID = "2026-01-01T02"
)

// The model's datasets with dimensions (SPEC §10): jt writes t, hour ×
// region over the schedule's hours, scheduled as js is; ju reads t one to
// one into u, of the same dimensions. Their tuples, in tuple order, are
// written out here, not computed.
var (
	modelDimsDef = partition.Def{Kind: partition.Dimensional, Dimensions: []partition.Dimension{
		{Name: "hour", Def: partition.Def{Kind: partition.Hourly, Start: "2025-12-31T22", End: "2026-01-01T01"}},
		{Name: "region", Def: partition.Def{Kind: partition.Static, Values: []string{"us", "eu"}}},
	}}
	modelDimsIDs = []string{"2025-12-31T22|eu", "2025-12-31T22|us", "2025-12-31T23|eu", "2025-12-31T23|us",
		"2026-01-01T00|eu", "2026-01-01T00|us", "2026-01-01T01|eu", "2026-01-01T01|us"}
)
