package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// seedTests replay the scenarios of the original design notes
// (seeds/000: happy path, dependent job, JobB fails and reruns, upstream
// found invalid), with the seeds' dataset and job names.
var seedTests = []testCase{
	{"SeedHappyPath", (*suite).testSeedHappyPath},
	{"SeedDependentJob", (*suite).testSeedDependentJob},
	{"SeedJobBFailsThenReruns", (*suite).testSeedJobBFails},
	{"SeedUpstreamInvalid", (*suite).testSeedUpstreamInvalid},
}

// testSeedHappyPath: jobA reads DataA and produces DataB.
func (s *suite) testSeedHappyPath(t *testing.T) {
	b := s.setup(t)
	b.datasets("data-a", "data-b")
	b.job("job-a", "data-b", "data-a")
	b.publish("data-a", "1")

	// The framework finds DataA/1 READY, no write lock on DataB/1, no
	// job-local lock of jobA on DataA/1.
	b.requireBlockers("job-a", "1")
	c, d := b.next("job-a")
	require.Equal(t, "1", d, "output dataid = input dataid")
	require.Equal(t, "data-b", c.Output)
	require.Equal(t, []string{"data-a"}, c.Inputs)
	require.Equal(t, running, b.status("data-b", "1"))
	require.Equal(t, running, b.inputStatus("data-a", "1", "job-a"))

	b.complete(c)
	require.Equal(t, ready, b.status("data-b", "1"))
	require.Equal(t, done, b.inputStatus("data-a", "1", "job-a"))
	_, d = b.next("job-a")
	require.Empty(t, d, "jobA will not run again on the same data")
}

// testSeedDependentJob: JobA produces DataA with dataid 1; JobB reads DataA
// into DataB; a second JobB instance skips the chunk the first one holds.
func (s *suite) testSeedDependentJob(t *testing.T) {
	b := s.setup(t)
	b.datasets("data-a", "data-b")
	b.job("job-a", "data-a")
	b.job("job-b", "data-b", "data-a")

	ca := b.claim("job-a", "1")
	require.Equal(t, running, b.status("data-a", "1"))
	_, d := b.next("job-b")
	require.Empty(t, d, "DataA/1 is being written")
	b.complete(ca)
	require.Equal(t, ready, b.status("data-a", "1"))

	cb, d := b.next("job-b")
	require.Equal(t, "1", d)
	require.Equal(t, running, b.inputStatus("data-a", "1", "job-b"))
	require.Equal(t, running, b.status("data-b", "1"))
	_, d = b.next("job-b")
	require.Empty(t, d, "a concurrent JobB skips DataA/1 (job-local read lock)")

	b.complete(cb)
	require.Equal(t, done, b.inputStatus("data-a", "1", "job-b"), "job-local lock retained")
	require.Equal(t, ready, b.status("data-b", "1"), "downstream may consume")
	_, d = b.next("job-b")
	require.Empty(t, d)
}

// testSeedJobBFails: JobB fails; DataA/1/JobB is ERROR (lock released) and
// DataB/1 blocks its consumers; JobB runs again on DataA/1.
func (s *suite) testSeedJobBFails(t *testing.T) {
	b := s.setup(t)
	b.datasets("data-a", "data-b", "data-c")
	b.job("job-a", "data-a")
	b.job("job-b", "data-b", "data-a")
	b.job("job-c", "data-c", "data-b")
	b.run("job-a", "1")

	cb, _ := b.next("job-b")
	b.fail(cb, "connection reset")
	require.Equal(t, errored, b.inputStatus("data-a", "1", "job-b"))
	require.Equal(t, failed, b.status("data-b", "1"))
	_, d := b.next("job-c")
	require.Empty(t, d, "downstream does not run on failed data")

	cb, d = b.next("job-b")
	require.Equal(t, "1", d, "DataA/1 is READY and JobB's row is ERROR: it reruns")
	require.Equal(t, 2, cb.Attempt)
	b.complete(cb)
	_, d = b.next("job-c")
	require.Equal(t, "1", d)
}

// testSeedUpstreamInvalid: JobA completed, JobB ran on its output, then
// JobA's data is found invalid. Resubmitting DataA/1 with cascade re-runs
// everything in order: JobB (and JobC after it) get the chunk again only
// once their input is READY again. Both variants of JobB's run: it
// completed (its DONE lock is released by the cascade) and it failed (its
// ERROR row needs nothing).
func (s *suite) testSeedUpstreamInvalid(t *testing.T) {
	for _, jobBFailed := range []bool{false, true} {
		name := "JobBCompleted"
		if jobBFailed {
			name = "JobBFailed"
		}
		t.Run(name, func(t *testing.T) {
			b := s.setup(t)
			b.datasets("raw", "data-a", "data-b", "data-c")
			b.job("job-a", "data-a", "raw")
			b.job("job-b", "data-b", "data-a")
			b.job("job-c", "data-c", "data-b")
			b.publish("raw", "1")
			b.run("job-a", "1")
			cb := b.claim("job-b", "1")
			if jobBFailed {
				b.fail(cb, "boom")
			} else {
				b.complete(cb)
				b.run("job-c", "1")
			}

			_, err := b.s.Resubmit(b.ctx, "data-a", "1", true)
			require.NoError(t, err)
			require.Equal(t, resubmit, b.status("data-a", "1"))
			require.Equal(t, errored, b.inputStatus("data-a", "1", "job-b"))
			if jobBFailed {
				// job-b failed on the bad data: the cascade resubmits its
				// chunk too, so fixing data-a heals the pipeline (SPEC §3).
				require.Equal(t, resubmit, b.status("data-b", "1"))
				require.Equal(t, none, b.status("data-c", "1"))
			} else {
				require.Equal(t, resubmit, b.status("data-b", "1"))
				require.Equal(t, errored, b.inputStatus("data-b", "1", "job-c"))
				require.Equal(t, resubmit, b.status("data-c", "1"))
			}
			stepDownstreamBlocked := func(jobs ...string) {
				t.Helper()
				for _, j := range jobs {
					_, d := b.next(j)
					require.Empty(t, d, "%s must not get chunk 1 before its input is READY again", j)
				}
			}
			stepDownstreamBlocked("job-b", "job-c")

			ca, d := b.next("job-a")
			require.Equal(t, "1", d, "job-a re-runs first")
			stepDownstreamBlocked("job-b", "job-c")
			b.complete(ca)

			cb, d = b.next("job-b")
			require.Equal(t, "1", d, "job-b re-runs once data-a/1 is READY again")
			require.Equal(t, 1, cb.Attempt, "a cascade counts attempts afresh")
			stepDownstreamBlocked("job-c")
			b.complete(cb)

			cc, d := b.next("job-c")
			require.Equal(t, "1", d, "job-c comes last")
			b.complete(cc)
			for _, ds := range []string{"data-a", "data-b", "data-c"} {
				require.Equal(t, ready, b.status(ds, "1"))
			}
			events := b.events(backends.EventFilter{DataID: "1"})
			var order []string
			for _, e := range events {
				if e.Role == backends.RoleOutput && e.To == ready && e.Job != "" {
					order = append(order, e.Job)
				}
			}
			if jobBFailed {
				require.Equal(t, []string{"job-a", "job-a", "job-b", "job-c"}, order)
			} else {
				require.Equal(t, []string{"job-a", "job-b", "job-c", "job-a", "job-b", "job-c"}, order)
			}
		})
	}
}
