package backendtest

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// Short names for the statuses the tests use all the time.
const (
	none     = backends.StatusNone
	running  = backends.StatusRunning
	ready    = backends.StatusReady
	failed   = backends.StatusFailed
	resubmit = backends.StatusResubmit
	hold     = backends.StatusHold
	done     = backends.StatusDone
	errored  = backends.StatusError
)

const executor = "test-executor"

// time40s is a step of the clock shorter than every lease the tests use.
const time40s = 40 * time.Second

func (b *bundle) datasets(ids ...string) {
	b.t.Helper()
	for _, id := range ids {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{
			ID: id, Description: "dataset " + id, URL: "postgres://warehouse/" + id,
			Connection: "sslmode=disable", Location: "load_date = '{dataid}'",
		})
		require.NoError(b.t, err, "upsert dataset %s", id)
	}
}

func (b *bundle) upsertJob(j backends.Job) backends.Job {
	b.t.Helper()
	out, err := b.s.UpsertJob(b.ctx, j)
	require.NoError(b.t, err, "upsert job %s", j.ID)
	return out
}

func (b *bundle) job(id, output string, inputs ...string) backends.Job {
	b.t.Helper()
	return b.upsertJob(backends.Job{ID: id, Output: output, Inputs: inputs})
}

// pipeline defines the suite's usual graph: src (a source) → ja → a → jb → b.
func (b *bundle) pipeline() {
	b.t.Helper()
	b.datasets("src", "a", "b")
	b.job("ja", "a", "src")
	b.job("jb", "b", "a")
}

func (b *bundle) publish(dataset string, dataids ...string) {
	b.t.Helper()
	for _, d := range dataids {
		_, err := b.s.Publish(b.ctx, dataset, d)
		require.NoError(b.t, err, "publish %s/%s", dataset, d)
	}
}

func (b *bundle) claim(job, dataid string) *backends.Claim {
	b.t.Helper()
	c, err := b.s.Claim(b.ctx, job, dataid, executor)
	require.NoError(b.t, err, "claim %s at %s", job, dataid)
	require.NotNil(b.t, c)
	require.Equal(b.t, dataid, c.DataID)
	return c
}

func (b *bundle) force(job, dataid string) *backends.Claim {
	b.t.Helper()
	c, err := b.s.Force(b.ctx, job, dataid, executor)
	require.NoError(b.t, err, "force %s at %s", job, dataid)
	require.NotNil(b.t, c)
	return c
}

// next calls FindNext and returns the claimed dataid, "" when nothing was claimable.
func (b *bundle) next(job string) (*backends.Claim, string) {
	b.t.Helper()
	c, err := b.s.FindNext(b.ctx, job, executor)
	require.NoError(b.t, err, "findNext %s", job)
	if c == nil {
		return nil, ""
	}
	return c, c.DataID
}

func (b *bundle) complete(c *backends.Claim) {
	b.t.Helper()
	require.NoError(b.t, b.s.Complete(b.ctx, c.Token), "complete %s at %s", c.Job, c.DataID)
}

func (b *bundle) fail(c *backends.Claim, reason string) {
	b.t.Helper()
	require.NoError(b.t, b.s.Fail(b.ctx, c.Token, reason), "fail %s at %s", c.Job, c.DataID)
}

func (b *bundle) release(c *backends.Claim) {
	b.t.Helper()
	require.NoError(b.t, b.s.Release(b.ctx, c.Token), "release %s at %s", c.Job, c.DataID)
}

// run claims job at dataid and completes it.
func (b *bundle) run(job, dataid string) {
	b.t.Helper()
	b.complete(b.claim(job, dataid))
}

func (b *bundle) chunk(dataset, dataid string) backends.ChunkDetail {
	b.t.Helper()
	d, err := b.s.Chunk(b.ctx, dataset, dataid)
	require.NoError(b.t, err, "chunk %s/%s", dataset, dataid)
	return d
}

// status is the OUTPUT status of a chunk (none when it has no row).
func (b *bundle) status(dataset, dataid string) backends.Status {
	b.t.Helper()
	d := b.chunk(dataset, dataid)
	if d.Output == nil {
		return none
	}
	require.Equal(b.t, backends.RoleOutput, d.Output.Role)
	return d.Output.Status
}

// row returns a status row of a chunk, nil when there is none.
func (b *bundle) row(dataset, dataid, job string, role backends.Role) *backends.StatusRow {
	b.t.Helper()
	for _, r := range b.chunk(dataset, dataid).Rows {
		if r.Job == job && r.Role == role {
			return &r
		}
	}
	return nil
}

func (b *bundle) inputStatus(dataset, dataid, job string) backends.Status {
	b.t.Helper()
	if r := b.row(dataset, dataid, job, backends.RoleInput); r != nil {
		return r.Status
	}
	return none
}

// allRows lists every status row through Chunks, page by page.
func (b *bundle) allRows() []backends.StatusRow {
	b.t.Helper()
	return listRows(b.t, b, backends.ChunkFilter{First: 7})
}

func listRows(t testing.TB, b *bundle, f backends.ChunkFilter) []backends.StatusRow {
	t.Helper()
	var rows []backends.StatusRow
	for range 10000 {
		page, err := b.s.Chunks(b.ctx, f)
		require.NoError(t, err)
		require.Len(t, page.Cursors, len(page.Rows), "one cursor per row")
		rows = append(rows, page.Rows...)
		if !page.HasNextPage {
			return rows
		}
		require.NotEmpty(t, page.Rows, "a page with HasNextPage must not be empty")
		f.After = page.Cursors[len(page.Cursors)-1]
	}
	t.Fatal("chunks paging does not end")
	return nil
}

// lastSeq is the Seq of the newest event (0 when there is none).
func (b *bundle) lastSeq() int64 {
	b.t.Helper()
	evs := b.events(backends.EventFilter{})
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// events lists every event matching f, page by page.
func (b *bundle) events(f backends.EventFilter) []backends.Event {
	b.t.Helper()
	var out []backends.Event
	for range 10000 {
		page, err := b.s.Events(b.ctx, f)
		require.NoError(b.t, err)
		out = append(out, page.Events...)
		if !page.HasNextPage {
			return out
		}
		require.NotEmpty(b.t, page.Events, "a page with HasNextPage must not be empty")
		f.After = page.Events[len(page.Events)-1].Seq
	}
	b.t.Fatal("events paging does not end")
	return nil
}

// snapshot is everything a stale token must not change.
type snapshot struct {
	rows    []backends.StatusRow
	lastSeq int64
}

func (b *bundle) snapshot() snapshot {
	b.t.Helper()
	return snapshot{rows: b.allRows(), lastSeq: b.lastSeq()}
}

func requireCode(t testing.TB, err error, code backends.Code, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Equal(t, code, backends.CodeOf(err), "error: %v", err)
	var e *backends.Error
	require.True(t, errors.As(err, &e), "error %v is not a *backends.Error", err)
	require.NotEmpty(t, e.Message, "errors say what went wrong")
}

// bk is an expected blocker. Job is compared too, except for an input chunk
// that has no row at all (nobody's row is missing there in particular).
type bk struct {
	kind    backends.BlockerKind
	dataset string
	job     string
	status  backends.Status
}

func normBlockers(bs []backends.Blocker) []backends.Blocker {
	out := make([]backends.Blocker, 0, len(bs))
	for _, b := range bs {
		if b.Kind == backends.BlockerInputNotReady && b.Status == none {
			b.Job = ""
		}
		b.Pool = "" // the pool a CONCURRENCY blocker names is checked in pools.go
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b backends.Blocker) int {
		return cmp.Or(cmp.Compare(string(a.Kind)+"/"+a.Dataset+"/"+a.Job, string(b.Kind)+"/"+b.Dataset+"/"+b.Job),
			backends.CompareDataID(a.DataID, b.DataID))
	})
	return out
}

func wantBlockers(dataid string, want []bk) []backends.Blocker {
	bs := make([]backends.Blocker, 0, len(want))
	for _, w := range want {
		bs = append(bs, backends.Blocker{Dataset: w.dataset, DataID: dataid, Job: w.job, Kind: w.kind, Status: w.status})
	}
	return normBlockers(bs)
}

func requireBlockers(t testing.TB, dataid string, got []backends.Blocker, want ...bk) {
	t.Helper()
	require.Equal(t, wantBlockers(dataid, want), normBlockers(got))
}

// requireLocked checks that err is LOCKED with exactly the given blockers.
func requireLocked(t testing.TB, err error, dataid string, want ...bk) {
	t.Helper()
	requireCode(t, err, backends.CodeLocked)
	var e *backends.Error
	require.True(t, errors.As(err, &e))
	requireBlockers(t, dataid, e.Blockers, want...)
}

func (b *bundle) requireBlockers(job, dataid string, want ...bk) {
	b.t.Helper()
	got, err := b.s.Blockers(b.ctx, job, dataid)
	require.NoError(b.t, err)
	require.NotNil(b.t, got, "Blockers returns an empty list, not nil, when the chunk is claimable")
	requireBlockers(b.t, dataid, got, want...)
}

// lk is an expected derived lock.
type lk struct {
	dataset string
	dataid  string
	kind    backends.LockKind
	job     string
	status  backends.Status
}

func toLocks(ls []backends.Lock) []lk {
	out := make([]lk, 0, len(ls))
	for _, l := range ls {
		out = append(out, lk{l.Dataset, l.DataID, l.Kind, l.Job, l.Status})
	}
	return out
}

func requireLocks(t testing.TB, got []backends.Lock, want ...lk) {
	t.Helper()
	if want == nil {
		want = []lk{}
	}
	require.ElementsMatch(t, want, toLocks(got))
}
