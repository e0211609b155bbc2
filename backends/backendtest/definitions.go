package backendtest

import (
	"strings"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// definitionTests cover datasets, jobs, credentials and the validation of
// every argument (SPEC §1, §3 "dataid", §5).
var definitionTests = []testCase{
	{"Datasets", (*suite).testDatasets},
	{"Jobs", (*suite).testJobs},
	{"JobValidation", (*suite).testJobValidation},
	{"Credentials", (*suite).testCredentials},
	{"DataIDValidation", (*suite).testDataIDValidation},
	{"UnknownJobAndDataset", (*suite).testUnknownJobAndDataset},
	{"DatasetPartitions", (*suite).testDatasetPartitions},
	{"JobLimits", (*suite).testJobLimits},
}

func (s *suite) testDatasets(t *testing.T) {
	b := s.setup(t)
	got, err := b.s.Datasets(b.ctx)
	require.NoError(t, err)
	require.Empty(t, got)

	d, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales", Description: "daily sales",
		URL: "s3://lake", Connection: "region=eu", Location: "s3://lake/sales/dt={dataid}/"})
	require.NoError(t, err)
	require.Equal(t, "sales", d.ID)
	require.Equal(t, epoch, d.CreatedAt.UTC())

	b.clock.Advance(time40s)
	d2, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "sales", Description: "changed",
		URL: "s3://lake2", Location: "s3://lake2/{dataid}"})
	require.NoError(t, err)
	require.Equal(t, epoch, d2.CreatedAt.UTC(), "an update keeps CreatedAt")
	require.Equal(t, epoch.Add(time40s), d2.UpdatedAt.UTC())

	one, err := b.s.Dataset(b.ctx, "sales")
	require.NoError(t, err)
	require.Equal(t, "changed", one.Description)
	require.Equal(t, "s3://lake2", one.URL)
	require.Equal(t, "s3://lake2/{dataid}", one.Location)
	require.Equal(t, epoch, one.CreatedAt.UTC())

	b.datasets("zz", "aa")
	all, err := b.s.Datasets(b.ctx)
	require.NoError(t, err)
	var ids []string
	for _, d := range all {
		ids = append(ids, d.ID)
	}
	require.Equal(t, []string{"aa", "sales", "zz"}, ids, "datasets are listed by id")

	for _, bad := range []backends.Dataset{
		{ID: ""}, {ID: "Upper"}, {ID: "-dash"}, {ID: "has space"}, {ID: "a/b"}, {ID: strings.Repeat("x", 64)},
		{ID: "ok", Location: "s3://lake/no-placeholder/"},
	} {
		_, err := b.s.UpsertDataset(b.ctx, bad)
		requireCode(t, err, backends.CodeInvalidArgument, "dataset %+v", bad)
	}
	_, err = b.s.UpsertDataset(b.ctx, backends.Dataset{ID: strings.Repeat("x", 63)})
	require.NoError(t, err, "63 characters is the longest id")
}

func (s *suite) testJobs(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "other", "a")
	j := b.upsertJob(backends.Job{ID: "ja", Description: "load a", Inputs: []string{"src", "other"}, Output: "a",
		Env: []backends.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}})
	require.Equal(t, backends.DefaultMaxAttempts, j.MaxAttempts, "maxAttempts defaults to 3")
	require.Equal(t, backends.DefaultLeaseSeconds, j.LeaseSeconds, "leaseSeconds defaults to 60")

	got, err := b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.Equal(t, []string{"src", "other"}, got.Inputs, "inputs keep their order")
	require.Equal(t, "a", got.Output)
	require.Equal(t, []backends.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}, got.Env, "env keeps its order")
	require.Equal(t, 3, got.MaxAttempts)
	require.Equal(t, 60, got.LeaseSeconds)
	require.False(t, got.Paused)
	require.Equal(t, "load a", got.Description)

	b.clock.Advance(time40s)
	upd := b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", MaxAttempts: 5, LeaseSeconds: 10, Paused: true,
		Key: backends.JobKey{Kind: "age", Public: "age1example"}})
	require.Equal(t, 5, upd.MaxAttempts)
	got, err = b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.Equal(t, []string{"src"}, got.Inputs)
	require.Equal(t, 10, got.LeaseSeconds)
	require.True(t, got.Paused)
	require.Equal(t, backends.JobKey{Kind: "age", Public: "age1example"}, got.Key)
	require.Equal(t, epoch, got.CreatedAt.UTC(), "an update keeps CreatedAt")
	require.Equal(t, epoch.Add(time40s), got.UpdatedAt.UTC())

	// An update without key material keeps the job's key.
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a"})
	got, err = b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.Equal(t, backends.JobKey{Kind: "age", Public: "age1example"}, got.Key)

	b.job("gen", "other") // a job without inputs
	got, err = b.s.Job(b.ctx, "gen")
	require.NoError(t, err)
	require.Empty(t, got.Inputs)
	all, err := b.s.Jobs(b.ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "gen", all[0].ID, "jobs are listed by id")
	require.Equal(t, "ja", all[1].ID)
}

func (s *suite) testJobValidation(t *testing.T) {
	b := s.setup(t)
	b.datasets("src", "a", "b", "c")
	b.job("ja", "a", "src")
	b.job("jb", "b", "a")
	cases := []struct {
		name string
		job  backends.Job
		code backends.Code
	}{
		{"BadID", backends.Job{ID: "Bad Id", Output: "c"}, backends.CodeInvalidArgument},
		{"NoOutput", backends.Job{ID: "jc", Inputs: []string{"a"}}, backends.CodeInvalidArgument},
		{"UnknownOutput", backends.Job{ID: "jc", Output: "nope"}, backends.CodeNotFound},
		{"UnknownInput", backends.Job{ID: "jc", Inputs: []string{"nope"}, Output: "c"}, backends.CodeNotFound},
		{"SecondProducer", backends.Job{ID: "jc", Inputs: []string{"src"}, Output: "a"}, backends.CodeAlreadyExists},
		{"ReadsOwnOutput", backends.Job{ID: "jc", Inputs: []string{"c"}, Output: "c"}, backends.CodeInvalidArgument},
		{"DuplicateInput", backends.Job{ID: "jc", Inputs: []string{"a", "a"}, Output: "c"}, backends.CodeInvalidArgument},
		// src → ja → a → jb → b; a job b → src closes a cycle.
		{"Cycle", backends.Job{ID: "jc", Inputs: []string{"b"}, Output: "src"}, backends.CodeInvalidArgument},
		// Changing ja to read b closes a → b → a.
		{"CycleByUpdate", backends.Job{ID: "ja", Inputs: []string{"b"}, Output: "a"}, backends.CodeInvalidArgument},
		{"NegativeAttempts", backends.Job{ID: "jc", Output: "c", MaxAttempts: -1}, backends.CodeInvalidArgument},
		{"NegativeLease", backends.Job{ID: "jc", Output: "c", LeaseSeconds: -5}, backends.CodeInvalidArgument},
		{"HugeLease", backends.Job{ID: "jc", Output: "c", LeaseSeconds: 8 * 24 * 3600}, backends.CodeInvalidArgument},
		{"EmptyEnvName", backends.Job{ID: "jc", Output: "c", Env: []backends.EnvVar{{Name: "", Value: "x"}}}, backends.CodeInvalidArgument},
		{"EnvNameWithEquals", backends.Job{ID: "jc", Output: "c", Env: []backends.EnvVar{{Name: "A=B", Value: "x"}}}, backends.CodeInvalidArgument},
		{"DuplicateEnv", backends.Job{ID: "jc", Output: "c", Env: []backends.EnvVar{{Name: "A"}, {Name: "A"}}}, backends.CodeInvalidArgument},
	}
	for _, c := range cases {
		_, err := b.s.UpsertJob(b.ctx, c.job)
		requireCode(t, err, c.code, c.name)
	}
	// Nothing of the refused definitions was stored.
	jobs, err := b.s.Jobs(b.ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	ja, err := b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.Equal(t, []string{"src"}, ja.Inputs)

	// A job may move to another output; its old output becomes a source.
	b.job("ja", "c", "src")
	b.job("jc", "a", "src")
}

func (s *suite) testCredentials(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("unused")
	err := b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age", Ciphertext: []byte("sealed-1")})
	require.NoError(t, err)
	err = b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "a", KeyKind: "age", Ciphertext: []byte("sealed-2")})
	require.NoError(t, err)
	err = b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age", Ciphertext: []byte("sealed-3")})
	require.NoError(t, err, "setting a credential again replaces it")

	creds, err := b.s.Credentials(b.ctx, "ja")
	require.NoError(t, err)
	require.Len(t, creds, 2)
	require.Equal(t, "a", creds[0].Dataset)
	require.Equal(t, []byte("sealed-2"), creds[0].Ciphertext)
	require.Equal(t, "src", creds[1].Dataset)
	require.Equal(t, []byte("sealed-3"), creds[1].Ciphertext)
	require.Equal(t, "age", creds[1].KeyKind)
	creds, err = b.s.Credentials(b.ctx, "jb")
	require.NoError(t, err)
	require.Empty(t, creds)

	err = b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "unused", KeyKind: "age", Ciphertext: []byte("x")})
	requireCode(t, err, backends.CodeInvalidArgument, "a job only gets credentials for datasets it uses")
	err = b.s.SetCredential(b.ctx, backends.Credential{Job: "nope", Dataset: "src", KeyKind: "age", Ciphertext: []byte("x")})
	requireCode(t, err, backends.CodeNotFound)
	err = b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "nope", KeyKind: "age", Ciphertext: []byte("x")})
	requireCode(t, err, backends.CodeNotFound)
	err = b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age"})
	requireCode(t, err, backends.CodeInvalidArgument, "an empty ciphertext is refused")
}

// badDataIDs are refused everywhere a dataid is taken.
var badDataIDs = []string{"", "a b", "a/b", "é", "a\x00", "100%", "a,b", "'1'", strings.Repeat("9", backends.MaxDataIDLen+1)}

func (s *suite) testDataIDValidation(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	for _, d := range badDataIDs {
		msg := "dataid " + d
		_, err := b.s.Publish(b.ctx, "src", d)
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		_, err = b.s.Claim(b.ctx, "ja", d, executor)
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		_, err = b.s.Force(b.ctx, "ja", d, executor)
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		_, err = b.s.Resubmit(b.ctx, "a", d, true)
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		_, err = b.s.Hold(b.ctx, "a", d, "why")
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		_, err = b.s.Chunk(b.ctx, "a", d)
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		_, err = b.s.Blockers(b.ctx, "ja", d)
		requireCode(t, err, backends.CodeInvalidArgument, msg)
		if d != "" { // empty means "no bound" / "no filter" in the read models
			_, err = b.s.Chunks(b.ctx, backends.ChunkFilter{From: d})
			requireCode(t, err, backends.CodeInvalidArgument, msg)
			_, err = b.s.Chunks(b.ctx, backends.ChunkFilter{To: d})
			requireCode(t, err, backends.CodeInvalidArgument, msg)
			_, err = b.s.Events(b.ctx, backends.EventFilter{DataID: d})
			requireCode(t, err, backends.CodeInvalidArgument, msg)
			_, err = b.s.LockGraph(b.ctx, backends.GraphFilter{DataID: d})
			requireCode(t, err, backends.CodeInvalidArgument, msg)
		}
	}
	require.Empty(t, b.allRows(), "no refused call wrote anything")

	// Every allowed character, and the longest dataid.
	for _, d := range []string{"0", "2026-11-22", "2026-11-22T10", "a.b_c:d=e+f-g", "ABCxyz", strings.Repeat("9", backends.MaxDataIDLen)} {
		b.publish("src", d)
		c := b.claim("ja", d)
		b.complete(c)
		require.Equal(t, ready, b.status("a", d))
	}

	// Bad executors are refused too.
	b.publish("src", "x1")
	_, err := b.s.Claim(b.ctx, "ja", "x1", "")
	requireCode(t, err, backends.CodeInvalidArgument, "empty executor")
	_, err = b.s.FindNext(b.ctx, "ja", "")
	requireCode(t, err, backends.CodeInvalidArgument, "empty executor")
	_, err = b.s.Force(b.ctx, "ja", "x1", strings.Repeat("e", 257))
	requireCode(t, err, backends.CodeInvalidArgument, "executor too long")
	_, err = b.s.Chunks(b.ctx, backends.ChunkFilter{Role: "BOTH"})
	requireCode(t, err, backends.CodeInvalidArgument, "unknown role")
	_, err = b.s.Chunks(b.ctx, backends.ChunkFilter{Status: "DONEISH"})
	requireCode(t, err, backends.CodeInvalidArgument, "unknown status")
}

func (s *suite) testUnknownJobAndDataset(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	nf := backends.CodeNotFound
	_, err := b.s.Job(b.ctx, "nope")
	requireCode(t, err, nf)
	_, err = b.s.Dataset(b.ctx, "nope")
	requireCode(t, err, nf)
	_, err = b.s.FindNext(b.ctx, "nope", executor)
	requireCode(t, err, nf)
	_, err = b.s.Claim(b.ctx, "nope", "1", executor)
	requireCode(t, err, nf)
	_, err = b.s.Force(b.ctx, "nope", "1", executor)
	requireCode(t, err, nf)
	_, err = b.s.Publish(b.ctx, "nope", "1")
	requireCode(t, err, nf)
	_, err = b.s.Resubmit(b.ctx, "nope", "1", false)
	requireCode(t, err, nf)
	_, err = b.s.Hold(b.ctx, "nope", "1", "why")
	requireCode(t, err, nf)
	_, err = b.s.Chunk(b.ctx, "nope", "1")
	requireCode(t, err, nf)
	_, err = b.s.Blockers(b.ctx, "nope", "1")
	requireCode(t, err, nf)
	_, err = b.s.Claims(b.ctx, "nope")
	requireCode(t, err, nf)
	_, err = b.s.LockGraph(b.ctx, backends.GraphFilter{Job: "nope"})
	requireCode(t, err, nf)
	_, err = b.s.LockGraph(b.ctx, backends.GraphFilter{Dataset: "nope"})
	requireCode(t, err, nf)
	// A chunk nobody touched is not an error: it has no rows.
	d := b.chunk("b", "77")
	require.Nil(t, d.Output)
	require.Empty(t, d.Rows)
	require.Empty(t, d.Locks)
	// Resubmitting a chunk that has no status is NOT_FOUND.
	_, err = b.s.Resubmit(b.ctx, "a", "77", true)
	requireCode(t, err, nf)
}
