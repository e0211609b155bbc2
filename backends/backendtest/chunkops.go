package backendtest

import (
	"fmt"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// Tests of the operations on chunks (operationTests): hold, resubmit
// with its cascade, publish, and the backfill of a new job.

func (s *suite) testHoldAndResubmit(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")

	c := b.claim("ja", "1")
	_, err := b.s.Hold(b.ctx, "a", "1", "no")
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", running})
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	requireLocked(t, err, "1", bk{backends.BlockerOutputLocked, "a", "ja", running})
	_, err = b.s.Resubmit(b.ctx, "a", "1", true)
	requireCode(t, err, backends.CodeLocked)
	b.complete(c)

	// Hold a READY chunk: consumers are blocked.
	b.clock.Advance(time40s)
	row, err := b.s.Hold(b.ctx, "a", "1", "suspicious totals")
	require.NoError(t, err)
	require.Equal(t, hold, row.Status)
	require.Equal(t, "suspicious totals", row.Reason)
	require.Equal(t, "ja", row.Job)
	require.Equal(t, backends.RoleOutput, row.Role)
	require.Equal(t, epoch.Add(time40s), row.UpdatedAt.UTC())
	require.Equal(t, 1, row.Attempt, "hold keeps the attempt count")
	_, err = b.s.Claim(b.ctx, "jb", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerInputNotReady, "a", "ja", hold})

	// Hold a chunk nobody produced yet: it gets a HOLD row.
	row, err = b.s.Hold(b.ctx, "a", "2", "wait for the audit")
	require.NoError(t, err)
	require.Equal(t, hold, row.Status)
	require.Equal(t, "ja", row.Job)
	require.Equal(t, 0, row.Attempt)
	_, d := b.next("ja")
	require.Empty(t, d)

	// Hold a source chunk: publishing it is refused until resubmitted.
	_, err = b.s.Hold(b.ctx, "src", "3", "late file")
	require.NoError(t, err)
	_, err = b.s.Publish(b.ctx, "src", "3")
	requireCode(t, err, backends.CodeLocked)
	changed, err := b.s.Resubmit(b.ctx, "src", "3", false)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	require.Equal(t, resubmit, changed[0].Status)
	require.Equal(t, "", changed[0].Job)
	b.publish("src", "3")
	require.Equal(t, ready, b.status("src", "3"))

	// Resubmit thaws; holding again from RESUBMIT and FAILED is allowed.
	changed, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	require.Equal(t, backends.RowKey{Dataset: "a", DataID: "1", Job: "ja", Role: backends.RoleOutput}, changed[0].RowKey)
	require.Equal(t, resubmit, changed[0].Status)
	require.Equal(t, 0, changed[0].Attempt, "resubmit resets the attempt count")
	_, err = b.s.Hold(b.ctx, "a", "1", "again")
	require.NoError(t, err)
	_, err = b.s.Resubmit(b.ctx, "a", "2", false)
	require.NoError(t, err)
	require.Equal(t, []string{"2", "3"}, b.drain("ja"))
	b.publish("src", "4")
	b.fail(b.claim("ja", "4"), "x")
	_, err = b.s.Hold(b.ctx, "a", "4", "from failed")
	require.NoError(t, err)
	require.Equal(t, hold, b.status("a", "4"))
	_, err = b.s.Resubmit(b.ctx, "a", "4", false)
	require.NoError(t, err)
	require.Equal(t, resubmit, b.status("a", "4"))
}

func (s *suite) testPublish(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	_, err := b.s.Publish(b.ctx, "a", "1")
	requireCode(t, err, backends.CodeInvalidArgument, "a is produced by ja")
	_, err = b.s.Publish(b.ctx, "b", "1")
	requireCode(t, err, backends.CodeInvalidArgument)

	b.clock.Advance(time40s)
	row, err := b.s.Publish(b.ctx, "src", "1")
	require.NoError(t, err)
	require.Equal(t, backends.RowKey{Dataset: "src", DataID: "1", Job: "", Role: backends.RoleOutput}, row.RowKey)
	require.Equal(t, ready, row.Status)
	require.Equal(t, epoch.Add(time40s), row.UpdatedAt.UTC())
	seq := b.lastSeq()
	row2, err := b.s.Publish(b.ctx, "src", "1")
	require.NoError(t, err, "publishing twice is harmless")
	require.Equal(t, ready, row2.Status)
	require.Equal(t, seq, b.lastSeq(), "publishing a READY chunk again records no transition")
	d := b.chunk("src", "1")
	require.NotNil(t, d.Output)
	require.Equal(t, "", d.Output.Job)
	requireLocks(t, d.Locks, lk{"src", "1", gw, "", ready})
}

// testResubmitCascade: cascade invalidates every chunk computed from the
// resubmitted one, transitively, atomically.
func (s *suite) testResubmitCascade(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("c", "d")
	b.job("jc", "c", "b")
	b.job("jd", "d", "a")
	b.publish("src", "1")
	for _, j := range []string{"ja", "jb", "jc", "jd"} {
		b.run(j, "1")
	}

	changed, err := b.s.Resubmit(b.ctx, "src", "1", true)
	require.NoError(t, err)
	var ds []string
	for _, r := range changed {
		require.Equal(t, resubmit, r.Status)
		require.Equal(t, backends.RoleOutput, r.Role)
		ds = append(ds, r.Dataset)
	}
	require.ElementsMatch(t, []string{"src", "a", "b", "c", "d"}, ds)
	for _, d := range []string{"src", "a", "b", "c", "d"} {
		require.Equal(t, resubmit, b.status(d, "1"), d)
	}
	require.Equal(t, errored, b.inputStatus("src", "1", "ja"))
	require.Equal(t, errored, b.inputStatus("a", "1", "jb"))
	require.Equal(t, errored, b.inputStatus("a", "1", "jd"))
	require.Equal(t, errored, b.inputStatus("b", "1", "jc"))
	for _, j := range []string{"ja", "jb", "jc", "jd"} {
		_, d := b.next(j)
		require.Empty(t, d, "%s must wait for its input to be READY again", j)
	}

	// Chunk 2: jb failed on a/2, so the cascade from a resubmits b/2 too,
	// with its attempts counted afresh (ResubmitCascadeFailedAndHold).
	b.publish("src", "2")
	b.run("ja", "2")
	b.fail(b.claim("jb", "2"), "boom")
	_, err = b.s.Resubmit(b.ctx, "a", "2", true)
	require.NoError(t, err)
	require.Equal(t, resubmit, b.status("a", "2"))
	require.Equal(t, resubmit, b.status("b", "2"))
	require.Zero(t, b.row("b", "2", "jb", backends.RoleOutput).Attempt)
	require.Equal(t, errored, b.inputStatus("a", "2", "jb"))

	// A live downstream claim refuses the cascade, and nothing changes.
	b.publish("src", "3")
	b.run("ja", "3")
	c := b.claim("jb", "3")
	before := b.snapshot()
	_, err = b.s.Resubmit(b.ctx, "src", "3", true)
	requireLocked(t, err, "3", bk{backends.BlockerLocalRead, "a", "jb", running})
	require.Equal(t, before, b.snapshot(), "a refused cascade is all-or-nothing")
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "src", "3", true)
	require.NoError(t, err)
	require.Equal(t, resubmit, b.status("b", "3"))
}

// testResubmitCascadeDiamond: jx reads a and b, and b is computed from a.
// A cascade from a reaches x twice; x is resubmitted once, and everything
// re-runs in order: ja, then jb, then jx once both its inputs are READY.
func (s *suite) testResubmitCascadeDiamond(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("x")
	b.job("jx", "x", "a", "b")
	b.publish("src", "1")
	for _, j := range []string{"ja", "jb", "jx"} {
		b.run(j, "1")
	}
	seq := b.lastSeq()
	changed, err := b.s.Resubmit(b.ctx, "src", "1", true)
	require.NoError(t, err)
	var ds []string
	for _, r := range changed {
		ds = append(ds, r.Dataset)
	}
	require.ElementsMatch(t, []string{"src", "a", "b", "x"}, ds, "each chunk is resubmitted once")
	out, in := backends.RoleOutput, backends.RoleInput
	require.ElementsMatch(t, []ev{
		{"src", "1", "", out, ready, resubmit, "system", 0},
		{"src", "1", "ja", in, done, errored, "system", 0},
		{"a", "1", "ja", out, ready, resubmit, "system", 0},
		{"a", "1", "jb", in, done, errored, "system", 0},
		{"a", "1", "jx", in, done, errored, "system", 0},
		{"b", "1", "jb", out, ready, resubmit, "system", 0},
		{"b", "1", "jx", in, done, errored, "system", 0},
		{"x", "1", "jx", out, ready, resubmit, "system", 0},
	}, toEvs(b.events(backends.EventFilter{After: seq})), "one transition per row")

	b.publish("src", "1")
	for _, step := range []struct {
		job     string
		blocked []string
	}{{"ja", []string{"jb", "jx"}}, {"jb", []string{"jx"}}, {"jx", nil}} {
		for _, j := range step.blocked {
			_, d := b.next(j)
			require.Empty(t, d, "%s runs before %s", step.job, j)
		}
		c, d := b.next(step.job)
		require.Equal(t, "1", d, step.job)
		require.Equal(t, 1, c.Attempt)
		b.complete(c)
	}
	require.Equal(t, ready, b.status("x", "1"))
}

// testBackfill: chunks already READY on a job's inputs become claimable by
// a job defined (or re-pointed) after they were published.
func (s *suite) testBackfill(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "src2", "a", "m")
	b.publish("src", "3", "1", "2")
	b.publish("src2", "5", "2")
	b.job("ja", "a", "src")
	require.Equal(t, []string{"1", "2", "3"}, b.drain("ja"))
	b.job("jm", "m", "src", "src2")
	require.Equal(t, []string{"2"}, b.drain("jm"), "a two-input job gets the dataids where both are READY")
	b.publish("src", "5")
	require.Equal(t, []string{"5"}, b.drain("jm"))

	// Re-pointing a job's inputs backfills from the new input.
	b.publish("src2", "10")
	b.job("ja", "a", "src2")
	require.Equal(t, []string{"5", "10"}, b.drain("ja"), "2 was already produced and stays READY")
}

// testOperatorEventsNameNoExecutor: an event records the executor of the
// claim that made its transition. An operator's resubmit (and the INPUT
// rows its cascade invalidates) and hold are no claim's: their events name
// no executor, though the rows keep the last claim's, so that the log
// does not credit an operator's action to the runner that last ran the
// chunk.
func (s *suite) testOperatorEventsNameNoExecutor(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	b.complete(b.claim("ja", "1"))
	b.complete(b.claim("jb", "1"))
	_, err := b.s.Resubmit(b.ctx, "a", "1", true)
	require.NoError(t, err)
	_, err = b.s.Hold(b.ctx, "a", "1", "checking")
	require.NoError(t, err)

	page, err := b.s.Events(b.ctx, backends.EventFilter{Dataset: "a", DataID: "1", First: 100})
	require.NoError(t, err)
	var got []string
	for _, e := range page.Events {
		got = append(got, fmt.Sprintf("%s %s %s %s→%s by %q", e.Job, e.Role, e.Dataset, e.From, e.To, e.Executor))
	}
	require.Equal(t, []string{
		`ja OUTPUT a →RUNNING by "` + executor + `"`,
		`ja OUTPUT a RUNNING→READY by "` + executor + `"`,
		`jb INPUT a →RUNNING by "` + executor + `"`,
		`jb INPUT a RUNNING→DONE by "` + executor + `"`,
		`ja OUTPUT a READY→RESUBMIT by ""`,
		`jb INPUT a DONE→ERROR by ""`,
		`ja OUTPUT a RESUBMIT→HOLD by ""`,
	}, got)
	rows, err := b.s.Chunk(b.ctx, "a", "1")
	require.NoError(t, err)
	for _, r := range rows.Rows {
		require.Equal(t, executor, r.Executor, "the rows keep the last claim's executor: %+v", r.RowKey)
	}
	page, err = b.s.Events(b.ctx, backends.EventFilter{Dataset: "b", DataID: "1", First: 100})
	require.NoError(t, err)
	last := page.Events[len(page.Events)-1]
	require.Equal(t, backends.StatusResubmit, last.To, "the cascade resubmitted b/1")
	require.Empty(t, last.Executor)
}
