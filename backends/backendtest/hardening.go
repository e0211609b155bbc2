package backendtest

import (
	"strings"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/stretchr/testify/require"
)

// hardeningTests cover the rules that make retries safe and the operator's
// overrides exact: SPEC §3 "Retries are safe", force, resubmit's cascade
// through FAILED and HOLD chunks, renewResource, and the bounds on stored
// text (SPEC §1 Text, Job env names).
var hardeningTests = []testCase{
	{"RetryComplete", (*suite).testRetryComplete},
	{"RetryFail", (*suite).testRetryFail},
	{"RetryRelease", (*suite).testRetryRelease},
	{"RetryAfterOtherEnding", (*suite).testRetryAfterOtherEnding},
	{"ClaimCarriesItsCatalog", (*suite).testClaimCarriesItsCatalog},
	{"ClaimsLeaveOutExpired", (*suite).testClaimsLeaveOutExpired},
	{"ForceWhileRead", (*suite).testForceWhileRead},
	{"ForceCascades", (*suite).testForceCascades},
	{"ResubmitCascadeFailedAndHold", (*suite).testResubmitCascadeFailedAndHold},
	{"TextBounds", (*suite).testTextBounds},
	{"EnvNames", (*suite).testEnvNames},
	{"ResourceLockTTLBound", (*suite).testResourceLockTTLBound},
	{"RenewResource", (*suite).testRenewResource},
}

// testRetryComplete: a runner whose complete answer was lost calls it
// again; it learns that its completion landed, and nothing changes twice.
func (s *suite) testRetryComplete(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	c := b.claim("ja", "1")
	b.complete(c)
	before := b.snapshot()
	seq := b.lastSeq()
	require.NoError(t, b.s.Complete(b.ctx, c.Token), "complete again: the first call landed")
	require.Equal(t, before, b.snapshot(), "a repeated complete writes nothing")
	require.Equal(t, seq, b.lastSeq(), "a repeated complete records no event")

	// Still the truth after downstream consumed the chunk.
	b.run("jb", "1")
	require.NoError(t, b.s.Complete(b.ctx, c.Token))
	// Every other operation on the ended claim is stale.
	requireCode(t, b.s.Fail(b.ctx, c.Token, "late"), backends.CodeStaleClaim)
	requireCode(t, b.s.Release(b.ctx, c.Token), backends.CodeStaleClaim)
	_, err := b.s.Heartbeat(b.ctx, c.Token)
	requireCode(t, err, backends.CodeStaleClaim)
	require.Equal(t, ready, b.status("a", "1"))

	// Batched on the backends that batch: many repeats at once.
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- b.s.Complete(b.ctx, c.Token) }()
	}
	for range 8 {
		require.NoError(t, <-errs)
	}
}

// testRetryFail: a repeated fail answers as the first did, without
// counting a second attempt, also once the chunk went to HOLD.
func (s *suite) testRetryFail(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", MaxAttempts: 2})
	b.publish("src", "1")
	c := b.claim("ja", "1")
	b.fail(c, "boom")
	before := b.snapshot()
	require.NoError(t, b.s.Fail(b.ctx, c.Token, "boom"), "fail again: the first call landed")
	require.NoError(t, b.s.Fail(b.ctx, c.Token, "another reason"), "the reason of a repeat does not matter")
	require.Equal(t, before, b.snapshot(), "a repeated fail writes nothing")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim)
	requireCode(t, b.s.Release(b.ctx, c.Token), backends.CodeStaleClaim)
	out := b.row("a", "1", "ja", backends.RoleOutput)
	require.Equal(t, failed, out.Status)
	require.Equal(t, 1, out.Attempt)
	require.Equal(t, "boom", out.Reason)

	c2 := b.claim("ja", "1")
	b.fail(c2, "boom again")
	require.Equal(t, hold, b.status("a", "1"))
	require.NoError(t, b.s.Fail(b.ctx, c2.Token, "boom again"))
	require.Equal(t, 2, b.row("a", "1", "ja", backends.RoleOutput).Attempt)
	requireCode(t, b.s.Fail(b.ctx, c.Token, "boom"), backends.CodeStaleClaim, "a newer claim ended since")
}

// testRetryRelease: a repeated release answers as the first did when the
// release left a row (the chunk had one before the claim).
func (s *suite) testRetryRelease(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	// A release that left no row behind cannot be told from a token never
	// issued (Guarantee4 refuses those): its repeat is STALE_CLAIM, and
	// changes nothing either.
	c := b.claim("ja", "1")
	b.release(c)
	before := b.snapshot()
	requireCode(t, b.s.Release(b.ctx, c.Token), backends.CodeStaleClaim)
	require.Equal(t, before, b.snapshot())

	b.fail(b.claim("ja", "2"), "boom")
	c2 := b.claim("ja", "2")
	b.release(c2)
	before = b.snapshot()
	require.NoError(t, b.s.Release(b.ctx, c2.Token))
	require.Equal(t, before, b.snapshot())
	requireCode(t, b.s.Complete(b.ctx, c2.Token), backends.CodeStaleClaim)
	requireCode(t, b.s.Fail(b.ctx, c2.Token, "x"), backends.CodeStaleClaim)
	out := b.row("a", "2", "ja", backends.RoleOutput)
	require.Equal(t, failed, out.Status)
	require.Equal(t, 1, out.Attempt)
}

// testRetryAfterOtherEnding: a claim that the reaper, a force or an
// operator ended was not ended by the runner's call: every call on it is
// STALE_CLAIM.
func (s *suite) testRetryAfterOtherEnding(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")

	c := b.claim("ja", "1")
	b.clock.Advance(61 * time.Second)
	n, err := b.s.ExpireLeases(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for name, err := range map[string]error{
		"complete": b.s.Complete(b.ctx, c.Token),
		"fail":     b.s.Fail(b.ctx, c.Token, "late"),
		"release":  b.s.Release(b.ctx, c.Token),
	} {
		requireCode(t, err, backends.CodeStaleClaim, "%s after the reaper failed the claim", name)
	}

	c = b.claim("ja", "2")
	f := b.force("ja", "2")
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim, "superseded")
	b.complete(f)
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim, "superseded, then the forced claim completed")
	require.NoError(t, b.s.Complete(b.ctx, f.Token))

	c = b.claim("ja", "3")
	b.complete(c)
	_, err = b.s.Resubmit(b.ctx, "a", "3", false)
	require.NoError(t, err)
	requireCode(t, b.s.Complete(b.ctx, c.Token), backends.CodeStaleClaim, "resubmitted since")
}

// testClaimCarriesItsCatalog: a claim carries the definitions of its job
// and datasets as its own transaction saw them, so that nothing read after
// the commit can change or fail its answer.
func (s *suite) testClaimCarriesItsCatalog(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.upsertJob(backends.Job{ID: "jb", Inputs: []string{"a"}, Output: "b", Env: []backends.EnvVar{{Name: "MODE", Value: "full"}}})
	b.publish("src", "1", "2")
	b.run("ja", "1")
	check := func(c *backends.Claim) {
		t.Helper()
		require.Len(t, c.Datasets, 2, "output, then each input")
		require.Equal(t, "b", c.Datasets[0].ID)
		require.Equal(t, "postgres://warehouse/b", c.Datasets[0].URL)
		require.Equal(t, "load_date = '{dataid}'", c.Datasets[0].Location)
		require.Equal(t, "a", c.Datasets[1].ID)
		require.Equal(t, []backends.EnvVar{{Name: "MODE", Value: "full"}}, c.Env)
	}
	c, _ := b.next("jb")
	check(c)
	// A later change of the catalog does not reach a claim already made.
	_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "b", URL: "postgres://elsewhere/b", Location: "x/{dataid}"})
	require.NoError(t, err)
	check(c)
	b.complete(c)
	c = b.claim("ja", "2")
	require.Len(t, c.Datasets, 2)
	require.Equal(t, "a", c.Datasets[0].ID)
	require.Equal(t, "src", c.Datasets[1].ID)
	hb, err := b.s.Heartbeat(b.ctx, c.Token)
	require.NoError(t, err)
	require.Len(t, hb.Datasets, 2, "a heartbeat's claim carries them too")
	f := b.force("ja", "2")
	require.Len(t, f.Datasets, 2, "and a forced claim")
}

// testClaimsLeaveOutExpired: a claim past its lease is not live, even
// before the reaper fails it, so Claims does not list it.
func (s *suite) testClaimsLeaveOutExpired(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	b.claim("ja", "1")
	b.clock.Advance(30 * time.Second)
	c2 := b.claim("ja", "2")
	b.clock.Advance(31 * time.Second) // the first lease has passed, the second has not
	claims, err := b.s.Claims(b.ctx, "")
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.Equal(t, c2.Token, claims[0].Token)
	claims, err = b.s.Claims(b.ctx, "ja")
	require.NoError(t, err)
	require.Len(t, claims, 1)
}

// testForceWhileRead: force never rewrites a chunk that another job's live
// claim is reading; the reader is named as the blocker.
func (s *suite) testForceWhileRead(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	b.run("ja", "1")
	reader := b.claim("jb", "1")
	before := b.snapshot()
	_, err := b.s.Force(b.ctx, "ja", "1", executor)
	requireLocked(t, err, "1", bk{backends.BlockerLocalRead, "a", "jb", running})
	require.Equal(t, before, b.snapshot(), "a refused force changes nothing")
	b.complete(reader)
	f := b.force("ja", "1")
	require.Equal(t, running, b.status("a", "1"))
	b.complete(f)
}

// testForceCascades: forcing a chunk that downstream jobs consumed
// invalidates their work as resubmit(cascade) does, in the same
// transaction; a live claim anywhere downstream refuses the force.
func (s *suite) testForceCascades(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("c")
	b.job("jc", "c", "b")
	b.publish("src", "1", "2")
	for _, j := range []string{"ja", "jb", "jc"} {
		b.run(j, "1")
	}
	f := b.force("ja", "1")
	require.Equal(t, running, b.status("a", "1"))
	require.Equal(t, errored, b.inputStatus("a", "1", "jb"))
	require.Equal(t, resubmit, b.status("b", "1"))
	require.Equal(t, errored, b.inputStatus("b", "1", "jc"))
	require.Equal(t, resubmit, b.status("c", "1"))
	require.Zero(t, b.row("b", "1", "jb", backends.RoleOutput).Attempt, "attempts counted afresh")
	_, d := b.next("jb")
	require.Empty(t, d, "b/1 waits for the forced a/1")
	b.complete(f)
	c, d := b.next("jb")
	require.Equal(t, "1", d)
	b.complete(c)
	c, d = b.next("jc")
	require.Equal(t, "1", d)
	b.complete(c)

	// A live claim downstream (jc reading b/2) refuses a force of a/2.
	b.run("ja", "2")
	b.run("jb", "2")
	cc := b.claim("jc", "2")
	before := b.snapshot()
	_, err := b.s.Force(b.ctx, "ja", "2", executor)
	requireLocked(t, err, "2", bk{backends.BlockerLocalRead, "b", "jc", running})
	require.Equal(t, before, b.snapshot(), "a refused force is all-or-nothing")
	b.complete(cc)
	b.force("ja", "2")
	require.Equal(t, resubmit, b.status("c", "2"))
}

// testResubmitCascadeFailedAndHold: a downstream chunk that failed on the
// bad data (FAILED, or HOLD with its attempts exhausted) is resubmitted by
// the cascade with its attempts counted afresh, so fixing the upstream
// chunk heals the pipeline.
func (s *suite) testResubmitCascadeFailedAndHold(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a", "b", "c")
	b.job("ja", "a", "src")
	b.upsertJob(backends.Job{ID: "jb", Inputs: []string{"a"}, Output: "b", MaxAttempts: 2})
	b.job("jc", "c", "b")
	b.publish("src", "1", "2")
	b.run("ja", "1")
	b.run("ja", "2")
	b.fail(b.claim("jb", "1"), "bad data")
	for range 2 {
		b.fail(b.claim("jb", "2"), "bad data")
	}
	require.Equal(t, failed, b.status("b", "1"))
	require.Equal(t, hold, b.status("b", "2"))

	for _, d := range []string{"1", "2"} {
		changed, err := b.s.Resubmit(b.ctx, "a", d, true)
		require.NoError(t, err)
		var ds []string
		for _, r := range changed {
			ds = append(ds, r.Dataset)
		}
		require.ElementsMatch(t, []string{"a", "b"}, ds, "dataid %s", d)
		out := b.row("b", d, "jb", backends.RoleOutput)
		require.Equal(t, resubmit, out.Status, d)
		require.Zero(t, out.Attempt, "attempts counted afresh at %s", d)
		require.Equal(t, errored, b.inputStatus("a", d, "jb"))
	}
	for _, d := range []string{"1", "2"} {
		c, got := b.next("ja")
		require.Equal(t, d, got)
		b.complete(c)
	}
	for _, d := range []string{"1", "2"} {
		c, got := b.next("jb")
		require.Equal(t, d, got)
		require.Equal(t, 1, c.Attempt)
		b.complete(c)
	}
	_, d := b.next("jc")
	require.Equal(t, "1", d, "the pipeline healed all the way down")

	// A chunk an operator put on HOLD stays there: the operator thaws it.
	b.publish("src", "3")
	b.run("ja", "3")
	b.fail(b.claim("jb", "3"), "bad data")
	_, err := b.s.Hold(b.ctx, "b", "3", "looking into it")
	require.NoError(t, err)
	_, err = b.s.Resubmit(b.ctx, "a", "3", true)
	require.NoError(t, err)
	require.Equal(t, hold, b.status("b", "3"), "an operator's HOLD is not lifted by a cascade")

}

// testTextBounds: every stored string is valid UTF-8 without NUL and
// bounded (SPEC §1 Text): INVALID_ARGUMENT on every backend, never
// INTERNAL; reasons are cut instead.
func (s *suite) testTextBounds(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	ok := backends.Dataset{ID: "d", Description: strings.Repeat("é", backends.MaxDescriptionBytes/2),
		URL: strings.Repeat("u", backends.MaxLocatorBytes), Connection: strings.Repeat("c", backends.MaxLocatorBytes),
		Location: strings.Repeat("l", backends.MaxLocatorBytes-len("{dataid}")) + "{dataid}"}
	_, err := b.s.UpsertDataset(b.ctx, ok)
	require.NoError(t, err, "text at its bounds is accepted")
	bad := map[string]func(d *backends.Dataset){
		"LongDescription": func(d *backends.Dataset) { d.Description = strings.Repeat("x", backends.MaxDescriptionBytes+1) },
		"LongURL":         func(d *backends.Dataset) { d.URL = strings.Repeat("x", backends.MaxLocatorBytes+1) },
		"LongConnection":  func(d *backends.Dataset) { d.Connection = strings.Repeat("x", backends.MaxLocatorBytes+1) },
		"LongLocation":    func(d *backends.Dataset) { d.Location = strings.Repeat("x", 800<<10) + "{dataid}" },
		"NULDescription":  func(d *backends.Dataset) { d.Description = "a\x00b" },
		"NULURL":          func(d *backends.Dataset) { d.URL = "s3://x\x00" },
		"BadUTF8":         func(d *backends.Dataset) { d.Connection = "\xff\xfe" },
	}
	for name, mutate := range bad {
		d := ok
		d.ID = "e"
		mutate(&d)
		_, err := b.s.UpsertDataset(b.ctx, d)
		requireCode(t, err, backends.CodeInvalidArgument, name)
	}
	_, err = b.s.Dataset(b.ctx, "e")
	requireCode(t, err, backends.CodeNotFound, "nothing of the refused datasets was stored")

	env := func(n int, value string) []backends.EnvVar {
		var out []backends.EnvVar
		for i := range n {
			out = append(out, backends.EnvVar{Name: "V" + strings.Repeat("X", i), Value: value})
		}
		return out
	}
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a",
		Description: strings.Repeat("x", backends.MaxDescriptionBytes), Env: env(backends.MaxEnvEntries, strings.Repeat("v", backends.MaxEnvValueBytes))})
	for name, j := range map[string]backends.Job{
		"LongDescription": {Description: strings.Repeat("x", backends.MaxDescriptionBytes+1)},
		"NULDescription":  {Description: "\x00"},
		"TooManyEnv":      {Env: env(backends.MaxEnvEntries+1, "v")},
		"LongEnvValue":    {Env: env(1, strings.Repeat("v", backends.MaxEnvValueBytes+1))},
		"NULEnvValue":     {Env: env(1, "a\x00")},
		"BadUTF8EnvValue": {Env: env(1, "\xc3")},
	} {
		j.ID, j.Inputs, j.Output = "ja", []string{"src"}, "a"
		_, err := b.s.UpsertJob(b.ctx, j)
		requireCode(t, err, backends.CodeInvalidArgument, name)
	}
	job, err := b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.Len(t, job.Env, backends.MaxEnvEntries, "the refused updates stored nothing")

	// A hold reason is cut like a failure reason, never refused.
	b.publish("src", "1")
	row, err := b.s.Hold(b.ctx, "src", "1", strings.Repeat("r", 3*backends.MaxReasonBytes)+"\x00\xff")
	require.NoError(t, err)
	require.LessOrEqual(t, len(row.Reason), backends.MaxReasonBytes)
	require.NotContains(t, row.Reason, "\x00")

	// Resource lock clients and resources are text too.
	for name, args := range map[string][2]string{
		"NULClient":   {"a\x00", "s3://x"},
		"NULResource": {"a", "s3://x\x00"},
		"UTF8Client":  {"\xff", "s3://x"},
	} {
		_, err := b.s.LockResource(b.ctx, args[0], args[1], backends.LockRead, 0)
		requireCode(t, err, backends.CodeInvalidArgument, name)
	}
}

// testEnvNames: job env names are plain shell names that change nothing
// about how a process loads or runs code, and never the runner's own
// CHUNKLOCK_* (SPEC §1 Job). Whole families are refused, not only the
// names listed one by one (TAR_OPTIONS, HTTPS_PROXY, RSYNC_RSH, ...),
// unless the operator allows them (engine.WithEnvAllow, given to a server
// restarted here); a refused upsert stores nothing, and withdrawing a name
// refuses it again.
func (s *suite) testEnvNames(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a")
	upsert := func(names ...string) error {
		env := make([]backends.EnvVar, len(names))
		for i, name := range names {
			env[i] = backends.EnvVar{Name: name, Value: "v"}
		}
		_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", Env: env})
		return err
	}
	requireEnv := func(names ...string) {
		t.Helper()
		job, err := b.s.Job(b.ctx, "ja")
		require.NoError(t, err)
		var got []string
		for _, e := range job.Env {
			got = append(got, e.Name)
		}
		require.Equal(t, names, got)
	}
	for _, name := range []string{"MODE", "_X", "A1", "WAREHOUSE_SCHEMA", "SHOP_DIR", "CURRENCY", "PATHWAY"} {
		require.NoError(t, upsert(name), name)
	}
	refused := []string{"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "ENV", "IFS", "SHELLOPTS", "PS4",
		"PROMPT_COMMAND", "PYTHONPATH", "PYTHONSTARTUP", "NODE_OPTIONS", "PERL5LIB", "PERL5OPT", "RUBYOPT",
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "GCONV_PATH", "DYLD_INSERT_LIBRARIES", "CHUNKLOCK_TOKEN", "CHUNKLOCK_SERVER",
		"GIT_SSH_COMMAND", "HOME",
		// By family.
		"TAR_OPTIONS", "RSYNC_RSH", "HTTPS_PROXY", "ALL_PROXY", "SSLKEYLOGFILE", "PIP_INDEX_URL", "RUSTC_WRAPPER",
		"MANPAGER", "JAVA_HOME", "KUBECONFIG", "SSL_CERT_FILE", "RUSTFLAGS",
		"mode", "1A", "A-B", ""}
	for _, name := range refused {
		requireCode(t, upsert("MODE", name), backends.CodeInvalidArgument, "env name %q", name)
	}
	requireEnv("PATHWAY")

	allow, err := envname.ParseAllow([]string{"TAR_OPTIONS", "HTTPS_PROXY"})
	require.NoError(t, err)
	b.restart(engine.WithEnvAllow(allow))
	require.NoError(t, upsert("TAR_OPTIONS", "HTTPS_PROXY", "MODE"), "the operator allows them")
	requireEnv("TAR_OPTIONS", "HTTPS_PROXY", "MODE")
	for _, name := range []string{"ALL_PROXY", "LD_PRELOAD", "CHUNKLOCK_URL"} {
		requireCode(t, upsert("TAR_OPTIONS", name), backends.CodeInvalidArgument, "env name %q, beside allowed ones", name)
	}
	requireEnv("TAR_OPTIONS", "HTTPS_PROXY", "MODE")

	// A claim carries the stored env as it is: the runner decides what it runs.
	b.publish("src", "1")
	c := b.claim("ja", "1")
	require.Equal(t, []backends.EnvVar{{Name: "TAR_OPTIONS", Value: "v"}, {Name: "HTTPS_PROXY", Value: "v"}, {Name: "MODE", Value: "v"}}, c.Env)

	b.restart()
	requireCode(t, upsert("TAR_OPTIONS", "MODE"), backends.CodeInvalidArgument, "withdrawn: refused again")
	requireEnv("TAR_OPTIONS", "HTTPS_PROXY", "MODE")
	require.NoError(t, upsert("MODE"), "the job's env is mended by an upsert without the name")
	requireEnv("MODE")
}

// testResourceLockTTLBound: every resource lock expires, at most
// MaxResourceLockTTL after it is taken or renewed.
func (s *suite) testResourceLockTTLBound(t *testing.T) {
	b := s.setup(t)
	l := b.lockResource("c", "s3://x", backends.LockRead, backends.MaxResourceLockTTL)
	require.Equal(t, epoch.Add(7*24*time.Hour), l.ExpiresAt.UTC())
	_, err := b.s.LockResource(b.ctx, "c", "s3://y", backends.LockRead, backends.MaxResourceLockTTL+time.Second)
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.LockResource(b.ctx, "c", "s3://y", backends.LockRead, 68*365*24*time.Hour)
	requireCode(t, err, backends.CodeInvalidArgument)
}

// testRenewResource: the holder extends its lock; others are FORBIDDEN,
// and an expired lock is NOT_FOUND.
func (s *suite) testRenewResource(t *testing.T) {
	b := s.setup(t)
	const res = "postgres://warehouse/sales"
	w := b.lockResource("writer", res, backends.LockWrite, 10*time.Second)
	b.clock.Advance(8 * time.Second)
	r, err := b.s.RenewResource(b.ctx, w.ID, "writer", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, w.ID, r.ID)
	require.Equal(t, backends.LockWrite, r.Mode)
	require.Equal(t, epoch.Add(18*time.Second), r.ExpiresAt.UTC())
	require.Equal(t, w.CreatedAt.UTC(), r.CreatedAt.UTC())
	b.clock.Advance(8 * time.Second) // t=16: past the first expiry, within the renewed one
	_, err = b.s.LockResource(b.ctx, "reader", res, backends.LockRead, 0)
	requireHolders(t, err, r)
	ls, err := b.s.ResourceLocks(b.ctx, backends.ResourceLockFilter{Resource: res})
	require.NoError(t, err)
	require.Len(t, ls, 1)
	require.Equal(t, epoch.Add(18*time.Second), ls[0].ExpiresAt.UTC())

	_, err = b.s.RenewResource(b.ctx, w.ID, "reader", time.Minute)
	requireCode(t, err, backends.CodeForbidden)
	_, err = b.s.RenewResource(b.ctx, w.ID, "writer", backends.MaxResourceLockTTL+time.Second)
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.RenewResource(b.ctx, "", "writer", time.Minute)
	requireCode(t, err, backends.CodeInvalidArgument)
	r, err = b.s.RenewResource(b.ctx, w.ID, "writer", 0)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().Add(backends.DefaultResourceLockTTL).UTC(), r.ExpiresAt.UTC(), "the default TTL")

	b.clock.Advance(2 * time.Hour)
	_, err = b.s.RenewResource(b.ctx, w.ID, "writer", time.Minute)
	requireCode(t, err, backends.CodeNotFound, "renewing an expired lock")
	_, err = b.s.RenewResource(b.ctx, "no-such-lock", "writer", time.Minute)
	requireCode(t, err, backends.CodeNotFound)
}
