package backendtest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// Tests of the range operations (SPEC §3 "Ranges"): publishRange,
// resubmitRange and holdRange over a dataset's existing chunks, or over
// its expected dataids when it has a partition definition.

var rangeTests = []testCase{
	{"RangeResubmitExisting", (*suite).testRangeResubmitExisting},
	{"RangeResubmitCascade", (*suite).testRangeResubmitCascade},
	{"RangeHoldExisting", (*suite).testRangeHoldExisting},
	{"RangeArguments", (*suite).testRangeArguments},
	{"RangeOrder", (*suite).testRangeOrder},
	{"RangeInterrupted", (*suite).testRangeInterrupted},
	{"RangeDefinedPublish", (*suite).testRangeDefinedPublish},
	{"RangeDefinedResubmitHold", (*suite).testRangeDefinedResubmitHold},
	{"RangeDefinedLimits", (*suite).testRangeDefinedLimits},
}

// skip is an expected skipped chunk.
type skip struct {
	dataid string
	code   backends.Code
}

func requireRange(t testing.TB, got backends.RangeResult, err error, changed, unchanged int, skipped ...skip) {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, changed, got.Changed, "changed")
	require.Equal(t, unchanged, got.Unchanged, "unchanged")
	var gotSkips []skip
	for _, s := range got.Skipped {
		require.NotEmpty(t, s.Reason, "a skipped chunk says why (%s)", s.DataID)
		gotSkips = append(gotSkips, skip{s.DataID, s.Code})
	}
	require.Equal(t, skipped, gotSkips, "skipped, in dataid order")
}

// ids returns the decimal dataids lo..hi.
func ids(lo, hi int) []string {
	var out []string
	for i := lo; i <= hi; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// countEvents counts the events of dataset's OUTPUT rows into status to.
func (b *bundle) countEvents(dataset string, to backends.Status) map[string]int {
	b.t.Helper()
	n := map[string]int{}
	for _, e := range b.events(backends.EventFilter{Dataset: dataset}) {
		if e.Role == backends.RoleOutput && e.To == to {
			n[e.DataID]++
		}
	}
	return n
}

func (s *suite) testRangeResubmitExisting(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", ids(1, 10)...)
	for _, d := range []string{"1", "2", "3", "4", "10"} {
		b.run("ja", d)
	}
	c5 := b.claim("ja", "5")
	b.fail(b.claim("ja", "6"), "broken")

	// Existing chunks of a in [1, 9]: 1-4 READY, 5 RUNNING, 6 FAILED; 7-9
	// have no row and are not part of the range; 10 is after 9 (shortlex).
	b.clock.Advance(time40s)
	res, err := b.s.ResubmitRange(b.ctx, "a", "1", "9", false)
	requireRange(t, res, err, 5, 0, skip{"5", backends.CodeLocked})
	for _, d := range []string{"1", "2", "3", "4", "6"} {
		r := b.row("a", d, "ja", backends.RoleOutput)
		require.Equal(t, resubmit, r.Status, d)
		require.Equal(t, 0, r.Attempt, "attempts counted afresh at %s", d)
		require.Equal(t, "resubmitted", r.Reason)
		require.Equal(t, epoch.Add(time40s), r.UpdatedAt.UTC())
	}
	require.Equal(t, running, b.status("a", "5"))
	require.Equal(t, ready, b.status("a", "10"))
	require.Equal(t, none, b.status("a", "7"))
	require.Equal(t, map[string]int{"1": 1, "2": 1, "3": 1, "4": 1, "6": 1}, b.countEvents("a", resubmit),
		"one event per chunk, as resubmit records it")

	// Again: nothing changes twice; the RUNNING chunk is still skipped.
	res, err = b.s.ResubmitRange(b.ctx, "a", "1", "9", false)
	requireRange(t, res, err, 0, 5, skip{"5", backends.CodeLocked})
	require.Len(t, b.countEvents("a", resubmit), 5)

	// Once the claim ends, a third call finishes the range.
	b.complete(c5)
	res, err = b.s.ResubmitRange(b.ctx, "a", "1", "9", false)
	requireRange(t, res, err, 1, 5)
	require.Equal(t, resubmit, b.status("a", "5"))
	// The producer claims them, RESUBMIT first.
	require.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, b.drain("ja"))

	// A resubmit over a range with no chunk changes nothing.
	res, err = b.s.ResubmitRange(b.ctx, "b", "1", "9", false)
	requireRange(t, res, err, 0, 0)
	// A source dataset's chunks are resubmitted too (job-less rows).
	res, err = b.s.ResubmitRange(b.ctx, "src", "2", "3", false)
	requireRange(t, res, err, 2, 0)
	require.Equal(t, resubmit, b.status("src", "2"))
}

func (s *suite) testRangeResubmitCascade(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", ids(1, 4)...)
	for _, d := range ids(1, 4) {
		b.run("ja", d)
	}
	b.run("jb", "1")
	b.run("jb", "2")
	cb := b.claim("jb", "3") // reads a/3 right now
	before := b.row("a", "3", "ja", backends.RoleOutput)

	res, err := b.s.ResubmitRange(b.ctx, "a", "1", "4", true)
	requireRange(t, res, err, 3, 0, skip{"3", backends.CodeLocked})
	for _, d := range []string{"1", "2"} {
		require.Equal(t, resubmit, b.status("a", d))
		require.Equal(t, resubmit, b.status("b", d), "cascade reaches b/%s", d)
		require.Equal(t, errored, b.inputStatus("a", d, "jb"))
	}
	require.Equal(t, resubmit, b.status("a", "4"))
	require.Equal(t, none, b.status("b", "4"))
	// The refused chunk is all or nothing: a/3 is untouched.
	require.Equal(t, before, b.row("a", "3", "ja", backends.RoleOutput))
	require.Equal(t, running, b.inputStatus("a", "3", "jb"))

	// Again: what was invalidated is not invalidated twice.
	res, err = b.s.ResubmitRange(b.ctx, "a", "1", "4", true)
	requireRange(t, res, err, 0, 3, skip{"3", backends.CodeLocked})
	require.Equal(t, map[string]int{"1": 1, "2": 1}, b.countEvents("b", resubmit))

	// A chunk resubmitted without cascade gets its cascade from a second
	// call with it: changed, though the chunk itself was RESUBMIT already.
	b.complete(cb)
	_, err = b.s.Resubmit(b.ctx, "a", "3", false)
	require.NoError(t, err)
	res, err = b.s.ResubmitRange(b.ctx, "a", "3", "3", true)
	requireRange(t, res, err, 1, 0)
	require.Equal(t, resubmit, b.status("b", "3"))
	require.Equal(t, errored, b.inputStatus("a", "3", "jb"))
}

func (s *suite) testRangeHoldExisting(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "5")
	b.run("ja", "1")
	c2 := b.claim("ja", "2")
	b.fail(b.claim("ja", "3"), "x")

	res, err := b.s.HoldRange(b.ctx, "a", "1", "5", "audit")
	requireRange(t, res, err, 2, 0, skip{"2", backends.CodeLocked})
	for _, d := range []string{"1", "3"} {
		r := b.row("a", d, "ja", backends.RoleOutput)
		require.Equal(t, hold, r.Status)
		require.Equal(t, "audit", r.Reason)
	}
	require.Equal(t, none, b.status("a", "4"), "no definition: only existing chunks are held")
	require.Equal(t, none, b.status("a", "5"))

	// Again with the same reason: unchanged; with another: changed.
	res, err = b.s.HoldRange(b.ctx, "a", "1", "5", "audit")
	requireRange(t, res, err, 0, 2, skip{"2", backends.CodeLocked})
	require.Len(t, b.countEvents("a", hold), 2)
	b.release(c2)
	res, err = b.s.HoldRange(b.ctx, "a", "1", "5", "audit 2")
	requireRange(t, res, err, 2, 0)
	require.Equal(t, "audit 2", b.row("a", "3", "ja", backends.RoleOutput).Reason)

	// Source chunks: held, then publishRange is refused without a definition.
	res, err = b.s.HoldRange(b.ctx, "src", "1", "9", "")
	requireRange(t, res, err, 4, 0)
	_, err = b.s.PublishRange(b.ctx, "src", "1", "9")
	requireCode(t, err, backends.CodeInvalidArgument)
	// resubmitRange thaws them.
	res, err = b.s.ResubmitRange(b.ctx, "src", "1", "9", false)
	requireRange(t, res, err, 4, 0)
}

func (s *suite) testRangeArguments(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	b.run("ja", "1")
	seq := b.lastSeq()
	calls := map[string]func(ds, from, to string) error{
		"publishRange": func(ds, from, to string) error {
			_, err := b.s.PublishRange(b.ctx, ds, from, to)
			return err
		},
		"resubmitRange": func(ds, from, to string) error {
			_, err := b.s.ResubmitRange(b.ctx, ds, from, to, true)
			return err
		},
		"holdRange": func(ds, from, to string) error {
			_, err := b.s.HoldRange(b.ctx, ds, from, to, "r")
			return err
		},
	}
	for name, call := range calls {
		requireCode(t, call("a", "2", "1"), backends.CodeInvalidArgument, "%s: from after to", name)
		requireCode(t, call("a", "10", "9"), backends.CodeInvalidArgument, "%s: shortlex order", name)
		requireCode(t, call("a", "", "9"), backends.CodeInvalidArgument, "%s: empty from", name)
		requireCode(t, call("a", "1", "bad id"), backends.CodeInvalidArgument, "%s: bad to", name)
		requireCode(t, call("nope", "1", "2"), backends.CodeNotFound, "%s: unknown dataset", name)
	}
	requireCode(t, calls["publishRange"]("a", "1", "2"), backends.CodeInvalidArgument, "a produced dataset is not published")
	require.Equal(t, seq, b.lastSeq(), "a refused call writes nothing")
	// A range of one dataid is fine.
	res, err := b.s.HoldRange(b.ctx, "a", "1", "1", "")
	requireRange(t, res, err, 1, 0)
}

func (s *suite) testRangeOrder(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	// More chunks than one transaction of a batching backend serves.
	all := ids(1, 70)
	b.publish("src", all...)
	running := map[string]bool{"9": true, "10": true, "33": true, "64": true}
	for _, d := range all {
		if running[d] {
			b.claim("ja", d)
		} else {
			b.run("ja", d)
		}
	}
	from := b.lastSeq()
	res, err := b.s.HoldRange(b.ctx, "a", "1", "70", "stop")
	requireRange(t, res, err, 66, 0,
		skip{"9", backends.CodeLocked}, skip{"10", backends.CodeLocked}, skip{"33", backends.CodeLocked}, skip{"64", backends.CodeLocked})
	var order []string
	for _, e := range b.events(backends.EventFilter{Dataset: "a", After: from}) {
		order = append(order, e.DataID)
	}
	var want []string
	for _, d := range all {
		if !running[d] {
			want = append(want, d)
		}
	}
	require.Equal(t, want, order, "chunks are changed in shortlex dataid order, one event each")
}

// cancelAfter is a context that cancels itself once asked n times whether
// it is done: it ends a call somewhere inside, wherever that is.
type cancelAfter struct {
	context.Context
	cancel context.CancelFunc
	left   atomic.Int64
}

func newCancelAfter(n int64) *cancelAfter {
	ctx, cancel := context.WithCancel(context.Background())
	c := &cancelAfter{Context: ctx, cancel: cancel}
	c.left.Store(n)
	return c
}

func (c *cancelAfter) tick() {
	if c.left.Add(-1) <= 0 {
		c.cancel()
	}
}

func (c *cancelAfter) Done() <-chan struct{} { c.tick(); return c.Context.Done() }
func (c *cancelAfter) Err() error            { c.tick(); return c.Context.Err() }

func (s *suite) testRangeInterrupted(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	all := ids(1, 80)
	b.publish("src", all...)
	for _, d := range all {
		b.run("ja", d)
	}
	// Half, then the whole range.
	res, err := b.s.ResubmitRange(b.ctx, "a", "1", "40", false)
	requireRange(t, res, err, 40, 0)
	res, err = b.s.ResubmitRange(b.ctx, "a", "1", "80", false)
	requireRange(t, res, err, 40, 40)

	// Cancelled at various points inside the call, then called again: the
	// range ends up held once, whatever the first call did.
	for i, n := range []int64{1, 5, 20, 60, 200} {
		reason := "stop " + strconv.Itoa(i)
		res, err := b.s.HoldRange(newCancelAfter(n), "a", "1", "80", reason)
		first := res.Changed
		if err == nil {
			requireRange(t, res, err, 80, 0)
		}
		res, err = b.s.HoldRange(b.ctx, "a", "1", "80", reason)
		require.NoError(t, err)
		require.Empty(t, res.Skipped)
		require.Equal(t, 80, res.Changed+res.Unchanged, "after a cancel at %d", n)
		require.LessOrEqual(t, first+res.Changed, 80, "nothing is counted twice")
		for _, d := range all {
			r := b.row("a", d, "ja", backends.RoleOutput)
			require.Equal(t, hold, r.Status)
			require.Equal(t, reason, r.Reason)
		}
	}
	// One HOLD event per chunk and reason: 5 rounds.
	for d, n := range b.countEvents("a", hold) {
		require.Equal(t, 5, n, "events of a/%s", d)
	}
	require.Len(t, b.countEvents("a", hold), 80)
}

// days returns the ISO dates of January 2026 from day lo to day hi.
func days(lo, hi int) []string {
	var out []string
	for d := lo; d <= hi; d++ {
		out = append(out, epoch.AddDate(0, 0, d-1).Format("2006-01-02"))
	}
	return out
}

var rawDef = &partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-12-31"}

// definedPipeline: raw (a source, DAILY from 2026-01-01 to 2026-12-31) →
// jc → clean (DAILY from 2026-01-01, unbounded).
func (b *bundle) definedPipeline() {
	b.t.Helper()
	for _, d := range []backends.Dataset{
		{ID: "raw", Partitions: rawDef},
		{ID: "clean", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}},
	} {
		_, err := b.s.UpsertDataset(b.ctx, d)
		require.NoError(b.t, err)
	}
	b.job("jc", "clean", "raw")
}

func (s *suite) testRangeDefinedPublish(t *testing.T) {
	b := s.setup(t)
	b.definedPipeline()
	b.publish("raw", "2026-01-03")
	_, err := b.s.Hold(b.ctx, "raw", "2026-01-05", "late feed")
	require.NoError(t, err)

	// Expected dataids only: the range starts before the definition does.
	res, err := b.s.PublishRange(b.ctx, "raw", "2025-12-01", "2026-01-10")
	requireRange(t, res, err, 8, 1, skip{"2026-01-05", backends.CodeLocked})
	for _, d := range days(1, 10) {
		want := ready
		if d == "2026-01-05" {
			want = hold
		}
		require.Equal(t, want, b.status("raw", d), d)
	}
	require.Equal(t, none, b.status("raw", "2026-01-11"))
	// Again: nothing more changes; events are one per chunk.
	res, err = b.s.PublishRange(b.ctx, "raw", "2025-12-01", "2026-01-10")
	requireRange(t, res, err, 0, 9, skip{"2026-01-05", backends.CodeLocked})
	require.Len(t, b.countEvents("raw", ready), 9)
	// The consumer claims what was published, in order.
	want := days(1, 10)
	want = append(want[:4], want[5:]...)
	require.Equal(t, want, b.drain("jc"))

	// After the definition's end: nothing expected, nothing done.
	res, err = b.s.PublishRange(b.ctx, "raw", "2027-01-01", "2027-01-31")
	requireRange(t, res, err, 0, 0)
	_, err = b.s.PublishRange(b.ctx, "clean", "2026-01-01", "2026-01-02")
	requireCode(t, err, backends.CodeInvalidArgument, "clean is produced by jc")
}

func (s *suite) testRangeDefinedResubmitHold(t *testing.T) {
	b := s.setup(t)
	b.definedPipeline()
	b.publish("raw", days(1, 10)...)
	for _, d := range days(1, 3) {
		b.run("jc", d)
	}
	b.claim("jc", "2026-01-04")

	// Resubmit: expected chunks with no row have nothing to resubmit.
	res, err := b.s.ResubmitRange(b.ctx, "clean", "2026-01-01", "2026-01-05", false)
	requireRange(t, res, err, 3, 0, skip{"2026-01-04", backends.CodeLocked}, skip{"2026-01-05", backends.CodeNotFound})
	// Hold: expected chunks with no row get one, beyond what raw has.
	res, err = b.s.HoldRange(b.ctx, "clean", "2026-01-04", "2026-01-12", "migration")
	requireRange(t, res, err, 8, 0, skip{"2026-01-04", backends.CodeLocked})
	for _, d := range days(5, 12) {
		require.Equal(t, hold, b.status("clean", d), d)
	}
	require.Equal(t, none, b.status("clean", "2026-01-13"))
	// The producer claims the resubmitted chunks and nothing held.
	require.Equal(t, days(1, 3), b.drain("jc"))

	// A chunk of raw published before raw had its definition, outside it,
	// is outside every range of raw.
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "raw"})
	require.NoError(t, err)
	b.publish("raw", "2025-12-31")
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "raw", Partitions: rawDef})
	require.NoError(t, err)
	res, err = b.s.ResubmitRange(b.ctx, "raw", "2025-12-01", "2026-01-02", true)
	requireRange(t, res, err, 2, 0)
	require.Equal(t, ready, b.status("raw", "2025-12-31"))
	require.Equal(t, resubmit, b.status("clean", "2026-01-01"), "cascade")

	// An INTEGER definition: shortlex order, numbers as numbers.
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "parts", Partitions: &partition.Def{Kind: partition.Integer, Start: "0", End: "30"}})
	require.NoError(t, err)
	res, err = b.s.HoldRange(b.ctx, "parts", "8", "12", "")
	requireRange(t, res, err, 5, 0)
	for _, d := range ids(8, 12) {
		require.Equal(t, hold, b.status("parts", d), d)
	}
}

func (s *suite) testRangeDefinedLimits(t *testing.T) {
	b := s.setup(t)
	b.definedPipeline()
	seq := b.lastSeq()
	for name, err := range map[string]error{
		"not a DAILY dataid": func() error { _, err := b.s.PublishRange(b.ctx, "raw", "5", "2026-01-02"); return err }(),
		"reversed":           func() error { _, err := b.s.HoldRange(b.ctx, "raw", "2026-01-02", "2026-01-01", ""); return err }(),
		// clean is unbounded: 2026-01-01 to 2053-05-19 is 10,001 days.
		"10,001 dataids": func() error {
			_, err := b.s.HoldRange(b.ctx, "clean", "2026-01-01", "2053-05-19", "")
			return err
		}(),
		"10,001 dataids, resubmit": func() error {
			_, err := b.s.ResubmitRange(b.ctx, "clean", "2020-01-01", "2053-05-19", true)
			return err
		}(),
	} {
		requireCode(t, err, backends.CodeInvalidArgument, name)
	}
	require.Equal(t, seq, b.lastSeq(), "a refused range writes nothing")
	// 10,000 expected dataids are allowed (none has a row to resubmit).
	res, err := b.s.ResubmitRange(b.ctx, "clean", "2026-01-01", "2053-05-18", false)
	require.NoError(t, err)
	require.Len(t, res.Skipped, backends.MaxRangeDataIDs)
	require.Equal(t, "2026-01-01", res.Skipped[0].DataID)
	require.Equal(t, "2053-05-18", res.Skipped[len(res.Skipped)-1].DataID)
}
